import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';

/**
 * Settings → Skytap → Test connection in Chromium against the real host and the emulator: each
 * of the five outcomes, with its remedy. The test reads the SAVED values, so each case saves
 * first; the emulator is re-scripted between cases.
 */
let emu: Emulator;
test.beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: SEEDS.demo });
});
test.afterAll(async () => {
  await emu.close();
});

test('Test connection shows each outcome and its remedy', async ({ app }) => {
  const { page } = app;
  await app.open('Settings');
  const result = page.locator('.conn-result');
  const test_ = async () => {
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect(page.getByRole('button', { name: 'Test connection' })).toBeEnabled({ timeout: 30_000 });
  };
  const save = async (v: { token?: string; project?: string }) => {
    await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('Username').fill('demo');
    await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel(/URL/).fill(emu.url);
    if (v.token !== undefined) await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('API token').fill(v.token);
    await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('Project ID (optional)').fill(v.project ?? '');
    await page.getByRole('form', { name: 'Skytap credentials' }).getByRole('button', { name: 'Save' }).click();
    await expect(page.getByTestId('token-status')).toHaveText('token set');
  };

  // before anything is saved: say what to do
  await test_();
  await expect(page.getByRole('alert').filter({ hasText: 'Save your Skytap username and API token' })).toBeVisible();

  // ok
  await save({ token: 'demo-token' });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'ok');
  await expect(result).toContainText('3 templates visible');

  // unauthorized: the account password instead of the API token
  await save({ token: 'my-account-password' });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'unauthorized');
  await expect(result).toContainText('API security token');

  // project_not_found
  await save({ token: 'demo-token', project: '999' });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'project_not_found');
  await expect(result).toContainText('Project ID');

  // ok, project-scoped
  await save({ project: '77' });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'ok');
  await expect(result).toContainText('project-scoped');

  // failed: a server error on both attempts
  await save({ project: '' });
  emu.faults.push({ match: 'GET /v2/templates', status: 500, times: 10 });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'failed');
  await expect(result).toContainText('(server)');
  emu.faults.clear();

  // failed: rate limited past the one-retry budget says "rate limited", not "failed"
  emu.faults.push({ match: 'GET /v2/templates', status: 429, retryAfter: 1, times: 10 });
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'failed');
  await expect(result).toContainText('(rate limited)');
  emu.faults.clear();

  // no_templates: an empty catalogue is red
  emu.state.templates.clear();
  await test_();
  await expect(result).toHaveAttribute('data-outcome', 'no_templates');
  await expect(result).toHaveClass(/bad/);
  await expect(result).toContainText('cannot be created from an empty catalogue');
});
