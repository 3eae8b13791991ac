import Database from 'better-sqlite3';
import { join } from 'node:path';
import { expect, test } from './fixtures';

/**
 * Issue 10 item 10 through the page: Settings shows SKYTAP_URL's value and saving the
 * form stores the person's own fields only; an empty SKYTAP_PROJECT_ID overrides nothing.
 */
test.use({ appEnv: { SKYTAP_URL: 'https://env-override.skytap.example', SKYTAP_PROJECT_ID: '' } });

test('Saving Settings never writes an environment override to the database', async ({ app }) => {
  const { page } = app;
  await app.open('Settings');
  const form = page.getByRole('form', { name: 'Skytap credentials' });
  await expect(form.getByLabel('API URL')).toHaveValue('https://env-override.skytap.example');
  await expect(page.getByText('Overridden in this process by SKYTAP_URL (never saved).')).toBeVisible();
  await form.getByLabel('Username').fill('se@example.com');
  await form.getByLabel('Project ID (optional)').fill('4242');
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByText('Saved.')).toBeVisible();

  const db = new Database(join(app.home, 'povdesk.db'), { readonly: true });
  const rows = Object.fromEntries(
    (db.prepare("SELECT key, value FROM settings WHERE key LIKE 'skytap.%'").all() as { key: string; value: string }[]).map((r) => [
      r.key,
      r.value,
    ]),
  );
  db.close();
  expect(rows).toEqual({ 'skytap.username': 'se@example.com', 'skytap.projectId': '4242' });

  // The empty SKYTAP_PROJECT_ID did not hide the saved project after a reload.
  await page.reload();
  await app.open('Settings');
  await expect(page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('Project ID (optional)')).toHaveValue('4242');
});
