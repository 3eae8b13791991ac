import { expect, test } from './fixtures';
import { missingHostTools, stopManager } from './local-vm-helpers';
import { listProcs } from '../../main/lib/procs';

/**
 * Issue 14's embedded default, in Chromium against the real host (browser mode), the real
 * vm-manager and QEMU + swtpm + OVMF (TCG here): from a fresh home with no Skytap account, one
 * click on "Rehearse on this laptop" builds the test image (its learn boot saves the golden
 * values), creates a local POV from the bundled test template, and its VM boots to ready with
 * attestation verified; Destroy removes the VM from the vm-manager and leaves no qemu or swtpm.
 */
test.describe('Rehearse on this laptop', () => {
  test.skip(missingHostTools.length > 0 && process.env.CI !== 'true', `missing ${missingHostTools.join(', ')}`);

  test('from a fresh home, one click creates a local POV from the bundled test template; destroy removes its VM', async ({ app }) => {
    test.setTimeout(720_000);
    const page = app.page;
    const started = Date.now();
    try {
      await app.open('POVs');
      await expect(page.getByText('No POVs yet')).toBeVisible();
      const offer = page.getByRole('region', { name: 'Rehearse' });
      await expect(offer).toContainText('No Skytap account yet? Rehearse on this laptop.');
      await offer.getByRole('button', { name: 'Rehearse on this laptop' }).click();
      await expect(offer.getByRole('status')).toContainText(/test template|vm-manager|test image|Creating/);

      // the row appears once pov.create has committed the POV; it is labelled with its platform
      const row = page.locator('[role="row"][data-pov]').filter({ has: page.getByRole('button', { name: /^Rehearsal / }) });
      await expect(row).toHaveCount(1, { timeout: 420_000 });
      await expect(row.getByTestId('pov-platform')).toHaveText('This laptop');
      await expect(page.getByRole('region', { name: 'Rehearse' }).getByRole('status')).toHaveCount(0, { timeout: 60_000 });
      await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 240_000 });
      const name = (await row.getByRole('button', { name: /^Rehearsal / }).textContent())!;
      const host = (await app.call('vm.host', {})) as { accelerator: { chosen: string | null } };
      console.log(
        `[rehearse] POV "${name}" running after ${((Date.now() - started) / 1000).toFixed(1)} s under ${host.accelerator.chosen} ` +
          `(test image built and learned in this run)`,
      );

      // the detail page: the POV's local VM with its console and attestation (the Local VMs page's panels)
      await row.getByRole('button', { name, exact: true }).click();
      await expect(page.getByRole('heading', { name, exact: true })).toBeVisible();
      await expect(page.getByTestId('local-platform-notes')).toContainText('no scheduler');
      const vmRow = page.getByLabel('Local VMs of this POV').locator('tr[data-vm]');
      await expect(vmRow).toHaveCount(1, { timeout: 30_000 });
      await expect(vmRow).toContainText('povdesk-test');
      await expect(vmRow.getByTestId('vm-state')).toHaveText('ready', { timeout: 240_000 });
      await vmRow.locator('td').first().getByRole('button').click();
      await expect(page.locator('.vm-console .xterm-rows')).toContainText('povdesk-agent', { timeout: 30_000 });
      await page.getByRole('tab', { name: 'Attestation' }).click();
      const att = page.getByLabel('Attestation', { exact: true });
      await expect(att).toContainText('Attestation required');
      await expect(att.getByRole('heading', { name: /^Stage ready: verified$/ })).toBeVisible({ timeout: 30_000 });
      // an artifact in test-results/, not a golden image
      await page.screenshot({ path: test.info().outputPath('rehearsal-pov-detail.png'), fullPage: true });
      await page.getByRole('button', { name: '← POVs' }).click();

      page.once('dialog', (d) => void d.accept());
      await expect(page.getByRole('button', { name: `Destroy ${name}` })).toBeEnabled({ timeout: 30_000 });
      const destroyAt = Date.now();
      await page.getByRole('button', { name: `Destroy ${name}` }).click();
      await expect(page.getByRole('button', { name, exact: true })).toHaveCount(0, { timeout: 120_000 });
      console.log(`[rehearse] destroyed in ${((Date.now() - destroyAt) / 1000).toFixed(1)} s`);
      const { vms } = (await app.call('vm.list', {})) as { vms: unknown[] };
      expect(vms).toEqual([]);
      const leftovers = listProcs().filter((p) => /qemu-system|swtpm/.test(p.argv[0] ?? '') && p.argv.join(' ').includes(app.home));
      expect(leftovers.map((p) => p.argv.join(' '))).toEqual([]);
    } finally {
      // leave the page first: its refresh would have the app start a fresh manager again
      await page.goto('about:blank');
      await stopManager(app.home);
    }
  });
});
