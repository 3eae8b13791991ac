import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from './fixtures';

/** Stops the manager the app started for this home and anything left under it (VMs outlive it on purpose). */
async function stopManager(home: string) {
  const ep = join(home, 'vm-manager', 'endpoint.json');
  if (existsSync(ep)) {
    try {
      process.kill((JSON.parse(readFileSync(ep, 'utf8')) as { pid: number }).pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await new Promise((r) => setTimeout(r, 2000));
  const marker = join(home, 'vm-manager');
  for (const d of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(marker)) process.kill(Number(d), 'SIGKILL');
    } catch {
      // gone
    }
  }
}

const HOST_TOOLS = ['/usr/bin/qemu-system-x86_64', '/usr/bin/swtpm', '/usr/share/OVMF/OVMF_CODE_4M.fd', '/bin/busybox'];
const missing = HOST_TOOLS.filter((p) => !existsSync(p));

test.describe('Local VM console', () => {
  test.skip(missing.length > 0 && process.env.CI !== 'true', `missing ${missing.join(', ')}`);

  test('interactive serial console from the Local VMs page: a command comes back, the runner is typed with sha256 match; the read-only tail has no typing', async ({ app }) => {
    test.setTimeout(300_000);
    const page = app.page;
    try {
      await app.open('Local VMs');
      await expect(page.getByTestId('vm-accel')).toHaveText(/^(kvm|tcg)$/, { timeout: 40_000 });
      await page.getByRole('button', { name: 'Build the test image' }).click();
      const form = page.getByRole('form', { name: 'Create VM' });
      await expect(form).toBeVisible({ timeout: 30_000 });
      await form.getByPlaceholder('demo-1').fill('e2e-con');
      await form.getByRole('button', { name: 'Create' }).click();
      const row = page.locator('tr[data-vm="e2e-con"]');
      await expect(row.getByTestId('vm-state')).toHaveText('ready', { timeout: 180_000 });

      await row.getByRole('button', { name: 'Interactive console' }).click();
      // the Terminals page shows, with the serial tab active
      await expect(page.getByRole('tab', { name: 'e2e-con serial' })).toHaveAttribute('aria-selected', 'true', { timeout: 15_000 });
      await expect(page.getByTestId('term-status')).toContainText('open');
      await page.locator('.term-box .xterm').click();
      await page.keyboard.type('\necho hello-$((6*7))\n');
      await expect(page.locator('.term-box .xterm-rows')).toContainText('hello-42', { timeout: 20_000 });

      await page.getByRole('button', { name: 'Type runner script' }).click();
      await expect(page.getByTestId('type-result')).toHaveText(/sha256 match \(\d+ lines at \/tmp\/dashboard-bootstrap-runner\)/, { timeout: 90_000 });

      await app.open('Local VMs');
      await page.locator('tr[data-vm="e2e-con"]').getByRole('button', { name: 'Open console' }).click();
      await expect(page.getByRole('tab', { name: 'e2e-con console (read-only)' })).toHaveAttribute('aria-selected', 'true', { timeout: 15_000 });
      // the tail's last screen: the end of the runner typed above, with the guest's sha256sum line
      await expect(page.locator('.term-box .xterm-rows')).toContainText('POVDESK_SUM:', { timeout: 20_000 });
      await expect(page.getByTestId('term-status')).toContainText('read-only');
      await expect(page.getByRole('button', { name: 'Type runner script' })).toHaveCount(0);
      // keys (and xterm's own answers to queries in the log) are not sent: no refusals printed over the log
      await page.locator('.term-box .xterm').click();
      await page.keyboard.type('ls\n');
      await page.waitForTimeout(500);
      await expect(page.locator('.term-box .xterm-rows')).not.toContainText('read-only');
    } finally {
      await page.goto('about:blank');
      await stopManager(app.home);
    }
  });
});
