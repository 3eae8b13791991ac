import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';

/**
 * Settings → Skytap → Test connection in Chromium against the real host and the emulator: each
 * of the five outcomes, with its remedy. The test reads the FORM as it is (saved or not), so the
 * cases fill the form and test without saving; each click's answer is the run it numbers
 * (`data-run`), so no case can read the one before it. The emulator is re-scripted between cases.
 */
let emu: Emulator;
test.beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: SEEDS.demo });
});
test.afterAll(async () => {
  await emu.close();
});

test('Test connection tests the form and shows each outcome and its remedy', async ({ app }) => {
  const { page } = app;
  // The keyring is the user's, not the home's: a token another spec saved would be "saved" here too.
  await app.call('settings.removeSkytap', {});
  await app.open('Settings');
  const form = page.getByRole('form', { name: 'Skytap credentials' });
  const button = page.getByRole('button', { name: 'Test connection' });
  let runs = 0;
  /** Clicks Test connection and answers this click's result (never an earlier one). */
  const test_ = async () => {
    await expect(button).toBeEnabled();
    await button.click();
    runs++;
    const answer = page.locator(`.conn-result[data-run="${runs}"]`);
    await expect(answer).toBeVisible({ timeout: 30_000 });
    return answer;
  };
  const fill = async (v: { token?: string; project?: string }) => {
    await form.getByLabel('Username').fill('demo');
    await form.getByLabel(/URL/).fill(emu.url);
    if (v.token !== undefined) await form.getByLabel('API token').fill(v.token);
    await form.getByLabel('Project ID (optional)').fill(v.project ?? '');
  };

  // an empty form with nothing saved: what to fill in, said once
  let result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'error');
  await expect(result).toContainText('Enter the Skytap username and API token above to test');
  await expect(page.getByText(/API security token on your Skytap Account page/)).toHaveCount(1);

  // ok: a filled-in form that was never saved
  await fill({ token: 'demo-token' });
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'ok');
  await expect(result).toContainText('3 templates visible');
  await expect(page.getByTestId('token-status')).toHaveText('token not set');

  // unauthorized: the account password instead of the API token
  await fill({ token: 'my-account-password' });
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'unauthorized');
  await expect(result).toContainText('API security token');

  // project_not_found
  await fill({ token: 'demo-token', project: '999' });
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'project_not_found');
  await expect(result).toContainText('Project ID');

  // saved, then tested with the token field blank: the saved token at the saved URL, project-scoped
  await fill({ token: 'demo-token', project: '77' });
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('token-status')).toHaveText('token set');
  await expect(form.getByLabel('API token')).toHaveValue('');
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'ok');
  await expect(result).toContainText('project-scoped');

  // failed: a server error on both attempts
  await fill({ project: '' });
  emu.faults.push({ match: 'GET /v2/templates', status: 500, times: 10 });
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'failed');
  await expect(result).toContainText('(server)');
  emu.faults.clear();

  // failed: rate limited past the one-retry budget says "rate limited", not "failed"
  emu.faults.push({ match: 'GET /v2/templates', status: 429, retryAfter: 1, times: 10 });
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'failed');
  await expect(result).toContainText('(rate limited)');
  emu.faults.clear();

  // no_templates: an empty catalogue is red
  emu.state.templates.clear();
  result = await test_();
  await expect(result).toHaveAttribute('data-outcome', 'no_templates');
  await expect(result).toHaveClass(/bad/);
  await expect(result).toContainText('cannot be created from an empty catalogue');

  // Remove Skytap account: username, token, URL and project are gone; the POVs page offers the rehearsal again
  page.once('dialog', (d) => void d.accept());
  await form.getByRole('button', { name: 'Remove Skytap account' }).click();
  await expect(page.getByTestId('token-status')).toHaveText('token not set');
  await expect(form.getByLabel('Username')).toHaveValue('');
  await expect(form.getByLabel('Project ID (optional)')).toHaveValue('');
  await app.open('POVs');
  await expect(page.getByText('No Skytap account yet?')).toBeVisible();
});
