import { existsSync } from 'node:fs';
import { expect, test } from './fixtures';
import { missingHostTools, stopManager } from './local-vm-helpers';

const missing = missingHostTools;

test.describe('Local VMs', () => {
  test.skip(missing.length > 0 && process.env.CI !== 'true', `missing ${missing.join(', ')}`);

  test('host report with the TCG warning; a VM created from the UI reaches ready, outlives an app restart, and is deleted', async ({
    app,
  }) => {
    test.setTimeout(240_000);
    let page = app.page;
    try {
      await app.open('Local VMs');
      const accel = page.getByTestId('vm-accel');
      await expect(accel).toHaveText(/^(kvm|tcg)$/, { timeout: 40_000 });
      if ((await accel.textContent()) === 'tcg' && existsSync('/dev/kvm')) {
        await expect(page.getByRole('alert').filter({ hasText: 'Warning: no hardware acceleration' })).toContainText('kvm');
      }
      await expect(page.getByText('No VMs', { exact: true })).toBeVisible();

      await page.getByRole('button', { name: 'Build the test image' }).click();
      const form = page.getByRole('form', { name: 'Create VM' });
      await expect(form).toBeVisible({ timeout: 30_000 });
      await form.getByPlaceholder('demo-1').fill('e2e-one');
      await form.getByRole('button', { name: 'Create' }).click();
      await expect(page.getByTestId('vm-job').getByText('Create VM e2e-one')).toBeVisible();
      const row = page.locator('tr[data-vm="e2e-one"]');
      await expect(row.getByTestId('vm-state')).toHaveText(/booting|attesting|ready/, { timeout: 30_000 });
      await expect(row.getByTestId('vm-state')).toHaveText('ready', { timeout: 150_000 });
      // install · boot · ready durations are filled in
      await expect(row).toContainText(/\d+\.\d s · \d+\.\d s · \d+\.\d s/);

      await row.getByRole('button', { name: 'e2e-one' }).click();
      await expect(page.locator('.vm-console .xterm-rows')).toContainText('povdesk-agent', { timeout: 20_000 });
      await page.getByRole('tab', { name: 'Attestation' }).click();
      // the test image carries reference measurements made from its files, so the form requires attestation by default
      await expect(page.getByLabel('Attestation', { exact: true })).toContainText('Attestation required; user-data released');
      await expect(page.getByLabel('Attestation', { exact: true })).toContainText('Stage initrd: verified');

      await app.restart();
      page = app.page; // Electron relaunches with a new window
      await app.open('Local VMs');
      await expect(page.locator('tr[data-vm="e2e-one"]').getByTestId('vm-state')).toHaveText('ready', { timeout: 30_000 });

      // SSH: a terminal signed in as root with the vm-manager's key, the attested guest's host key pre-trusted (no question).
      await page.locator('tr[data-vm="e2e-one"]').getByRole('button', { name: 'SSH', exact: true }).click();
      await expect(page.getByRole('tab', { name: 'root@e2e-one' })).toBeVisible({ timeout: 20_000 });
      await expect(page.getByTestId('term-status')).toContainText('open', { timeout: 60_000 });
      await expect(page.getByTestId('term-status')).toContainText("signed in with the vm-manager's key for e2e-one");
      await expect(page.locator('.hostkey-dialog')).toHaveCount(0);
      await page.locator('.term-box .xterm').click();
      await page.keyboard.type('echo vm-$((6*7)) uid-$(id -u)\n');
      await expect(page.locator('.term-box .xterm-rows')).toContainText('vm-42 uid-0', { timeout: 20_000 });
      await page.getByRole('button', { name: 'Close root@e2e-one' }).click();
      await app.open('Local VMs');

      const again = page.locator('tr[data-vm="e2e-one"]');
      await again.getByRole('button', { name: 'Delete' }).click();
      await expect(again.getByRole('group', { name: 'Confirm delete e2e-one' })).toBeVisible();
      await again.getByRole('button', { name: 'Delete VM' }).click();
      await expect(page.locator('tr[data-vm="e2e-one"]')).toHaveCount(0, { timeout: 30_000 });
      await expect(page.getByText('No VMs', { exact: true })).toBeVisible();
    } finally {
      // leave the page first: its refresh would have the app start a fresh manager again
      await page.goto('about:blank');
      await stopManager(app.home);
    }
  });
});
