import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect, test } from './fixtures';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    const st = statSync(p);
    // Regular files only: the owner's socket (owner.sock) lives in the home too and cannot be read.
    return st.isDirectory() ? filesUnder(p) : st.isFile() ? [p] : [];
  });
}

test('Skytap credentials survive a host restart, the token lives only in the keyring', async ({ app }) => {
  let page = app.page;
  const token = `tok${randomBytes(16).toString('hex')}`;
  await app.open('Settings');
  await expect(page.getByTestId('keyring-backend')).toContainText('OS keychain');
  await expect(page.getByTestId('token-status')).toHaveText('token not set');
  const form = page.getByRole('form', { name: 'Skytap credentials' });
  await form.getByLabel('Username').fill('se@example.com');
  await form.getByLabel('API token').fill(token);
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('token-status')).toHaveText('token set');

  await app.restart();
  page = app.page; // Electron relaunches with a new window
  await app.open('Settings');
  await expect(page.getByTestId('token-status')).toHaveText('token set');
  const again = page.getByRole('form', { name: 'Skytap credentials' });
  await expect(again.getByLabel('Username')).toHaveValue('se@example.com');
  // The form never receives the token back.
  await expect(again.getByLabel('API token')).toHaveValue('');

  const fromKeyring = execFileSync('secret-tool', ['lookup', 'service', 'povdesk', 'account', 'skytap-api-token']).toString();
  expect(fromKeyring).toBe(token);

  const needles = [token, Buffer.from(token).toString('base64'), Buffer.from(token).toString('hex')];
  const files = filesUnder(app.home);
  expect(files.some((f) => f.endsWith('povdesk.db'))).toBe(true);
  expect(files.some((f) => f.endsWith('.log'))).toBe(true);
  for (const f of files) {
    const bytes = readFileSync(f);
    for (const n of needles) expect(bytes.includes(Buffer.from(n)), `${f} contains the token`).toBe(false);
  }
  for (const n of needles) expect(app.output().includes(n), 'host output contains the token').toBe(false);
});

test('a page opened without the launch token says how to get in', async ({ app }) => {
  test.skip(app.mode === 'electron', 'browser mode only: Electron needs no launch token');
  const { page } = app;
  await page.goto(app.url.replace(/#.*$/, ''));
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await app.open('Settings');
  await expect(page.getByRole('alert').first()).toContainText('without its launch token');
});
