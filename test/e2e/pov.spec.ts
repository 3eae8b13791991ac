import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';

/**
 * A POV's whole life through the UI in Chromium, against the real host (browser mode) and the
 * Skytap emulator on loopback: create from a searched template, suspend, start, destroy.
 * The emulator runs in this test process; the host reaches it through SKYTAP_URL.
 */
let emu: Emulator;
test.beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    seed: SEEDS.demo,
    timing: { createBusyMs: 400, runstateBusyMs: 400, deleteMs: 400, rateLimitedMs: 800 },
  });
});
test.afterAll(async () => {
  await emu.close();
});

test.use({
  appEnv: {
    SKYTAP_USERNAME: 'demo',
    SKYTAP_API_TOKEN: 'demo-token',
    POVDESK_SKYTAP_POLL_MS: '150',
  },
});

test('create, suspend, start and destroy a POV from the POVs page', async ({ app }) => {
  // the URL is only known once the emulator listens, so it is saved through Settings (the env
  // overrides username and token; the URL comes from the form)
  const { page } = app;
  await app.open('Settings');
  await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('Username').fill('demo');
  const url = page.getByRole('form', { name: 'Skytap credentials' }).getByLabel(/URL/);
  await url.fill(emu.url);
  await page.getByRole('form', { name: 'Skytap credentials' }).getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Connected' })).toContainText('3 templates');

  await app.open('POVs');
  await expect(page.getByText('No POVs yet')).toBeVisible();
  // The dialog is a modal <dialog>: Tab never reaches the page behind (it may pass through the
  // browser's own UI, the body here), Escape closes it, focus goes back to the opener.
  const opener = page.getByRole('button', { name: 'New POV' });
  await opener.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Create POV' });
  await expect(dialog).toBeVisible();
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press(i % 3 === 2 ? 'Shift+Tab' : 'Tab');
    expect(await dialog.evaluate((d) => document.activeElement === document.body || d.contains(document.activeElement))).toBe(true);
  }
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(opener).toBeFocused();
  await opener.click();
  await dialog.getByLabel('Search templates').fill('windows ad');
  await expect(dialog.getByRole('option')).toHaveCount(1);
  await dialog.getByRole('option', { name: /Windows AD lab/ }).click();
  await dialog.getByLabel('POV name').fill('Initech eval');
  await dialog.getByRole('button', { name: 'Create' }).click();
  await expect(dialog).toBeHidden();

  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Initech eval', exact: true }) });
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });
  await expect(row).toContainText('Windows AD lab');
  await expect(row).toContainText(/confirmed just now/);
  expect(emu.state.environmentIds()).toHaveLength(1);

  await page.getByRole('button', { name: 'Suspend Initech eval' }).click();
  await expect(row.getByTestId('runstate')).toHaveText('suspended', { timeout: 30_000 });
  await expect(page.getByRole('button', { name: 'Suspend Initech eval' })).toBeDisabled();

  await expect(page.getByRole('button', { name: 'Start Initech eval' })).toBeEnabled();
  await page.getByRole('button', { name: 'Start Initech eval' }).click();
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });

  // the detail shows the VMs with their OS
  await page.getByRole('button', { name: 'Initech eval', exact: true }).click();
  const vms = page.getByRole('table', { name: 'VMs' });
  await expect(vms).toContainText('dc01');
  await expect(vms.getByLabel('OS of dc01')).toHaveValue('');
  await expect(vms.getByLabel('OS of dc01').locator('option').first()).toHaveText('Skytap says: windows');
  await page.getByRole('button', { name: '← POVs' }).click();

  page.once('dialog', (d) => void d.accept());
  await expect(page.getByRole('button', { name: 'Destroy Initech eval' })).toBeEnabled();
  await page.getByRole('button', { name: 'Destroy Initech eval' }).click();
  await expect(page.getByRole('button', { name: 'Initech eval', exact: true })).toHaveCount(0, { timeout: 30_000 });
  expect(emu.state.environmentIds()).toEqual([]);
});
