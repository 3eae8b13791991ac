import { expect, test } from './fixtures';
import { missingHostTools, stopManager } from './local-vm-helpers';

/**
 * Issue 19's screenshots of a local VM with verified attestation, on the real vm-manager with
 * QEMU + swtpm + OVMF (TCG here): build the test image (its reference measurements are made from
 * its files, no boot), then a VM that requires attestation boots to ready with both quotes
 * verified, its event log checked against them.
 * Screenshots are artifacts in test-results/, not golden images. The golden-values dialog's focus
 * trap is checked in test/renderer/dialogs.
 */
test.describe('Attested local VM', () => {
  test.skip(missingHostTools.length > 0 && process.env.CI !== 'true', `missing ${missingHostTools.join(', ')}`);

  test('an attested VM reaches ready with both stages verified; screenshots of it and its console', async ({ app }) => {
    test.setTimeout(600_000);
    const page = app.page;
    await page.setViewportSize({ width: 1280, height: 900 });
    try {
      await app.open('Local VMs');
      await expect(page.getByTestId('vm-accel')).toHaveText(/^(kvm|tcg)$/, { timeout: 40_000 });
      await page.getByRole('button', { name: 'Build the test image' }).click();
      const images = page.getByLabel('Images', { exact: true });
      await expect(images).toContainText('reference measurements (attested VMs of any size)', { timeout: 120_000 });

      const form = page.getByRole('form', { name: 'Create VM' });
      await form.getByPlaceholder('demo-1').fill('attested-one');
      await expect(form.getByRole('checkbox', { name: /Require attestation/ })).toBeChecked();
      await form.getByRole('button', { name: 'Create' }).click();
      const row = page.locator('tr[data-vm="attested-one"]');
      await expect(row.getByTestId('vm-state')).toHaveText('ready', { timeout: 240_000 });

      await row.getByRole('button', { name: 'attested-one' }).click();
      await page.getByRole('tab', { name: 'Attestation' }).click();
      const att = page.getByLabel('Attestation', { exact: true });
      await expect(att).toContainText('Attestation required');
      await expect(att).toContainText('user-data released');
      await expect(att.getByRole('heading', { name: /^Stage initrd: verified$/ })).toBeVisible();
      await expect(att.getByRole('heading', { name: /^Stage ready: verified$/ })).toBeVisible();
      await expect(att.getByLabel('Event log, stage initrd')).toContainText(
        /Event log: \d+ events, \d+ checked against the image's reference measurements, \d+ allowed by type · all match/,
      );
      await page.screenshot({ path: test.info().outputPath('local-vm-attested.png'), fullPage: true });
      await page.getByRole('tab', { name: 'Console' }).click();
      await expect(page.locator('.vm-console .xterm-rows')).toContainText('quote ready verified', { timeout: 20_000 });
      await page.screenshot({ path: test.info().outputPath('local-vm-console.png'), fullPage: true });

      await row.getByRole('button', { name: 'Delete' }).click();
      await row.getByRole('button', { name: 'Delete VM' }).click();
      await expect(page.locator('tr[data-vm="attested-one"]')).toHaveCount(0, { timeout: 30_000 });
    } finally {
      await page.goto('about:blank');
      await stopManager(app.home);
    }
  });
});
