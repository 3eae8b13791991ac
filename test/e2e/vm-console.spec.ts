import { expect, test } from './fixtures';
import { missingHostTools, stopManager } from './local-vm-helpers';

const missing = missingHostTools;

test.describe('Local VM console', () => {
  test.skip(missing.length > 0 && process.env.CI !== 'true', `missing ${missing.join(', ')}`);

  test(
    'interactive serial console from the Local VMs page: a command comes back, the runner is typed with sha256 match; the read-only ' +
      'tail has no typing',
    async ({ app }) => {
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
        await expect(page.getByTestId('type-result')).toHaveText(/sha256 match \(\d+ lines at \/tmp\/dashboard-bootstrap-runner\)/, {
          timeout: 90_000,
        });

        await app.open('Local VMs');
        await page.locator('tr[data-vm="e2e-con"]').getByRole('button', { name: 'Open console' }).click();
        await expect(page.getByRole('tab', { name: 'e2e-con console (read-only)' })).toHaveAttribute('aria-selected', 'true', {
          timeout: 15_000,
        });
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
    },
  );
});
