import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect, test } from './fixtures';

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

test('Templates page shows the runner; its text and its download both match the sha256 it shows', async ({ app }) => {
  const { page } = app;
  await app.open('Templates');
  const shown = (await page.getByTestId('runner-sha256').textContent())!.trim();
  expect(shown).toMatch(/^[0-9a-f]{64}$/);
  await expect(page.getByTestId('sha256-command')).toHaveText('sha256sum /usr/local/sbin/dashboard-bootstrap-runner');

  // The exact text on the page hashes to the sha256 the page tells the typist to expect.
  const script = await page.getByTestId('runner-script').inputValue();
  expect(script).toMatch(/^#!\/bin\/sh\n/);
  expect(script).toMatch(/^[\x20-\x7e\n]*$/);
  expect(sha256(script)).toBe(shown);

  // One row per line, each with its line number and a 4-hex checksum of that line.
  const rows = page.getByTestId('runner-lines').locator('tbody tr');
  const lines = script.replace(/\n$/, '').split('\n');
  await expect(rows).toHaveCount(lines.length);
  for (const n of [1, 2, Math.floor(lines.length / 2), lines.length]) {
    const cells = rows.nth(n - 1).locator('td');
    await expect(cells.nth(0)).toHaveText(String(n));
    await expect(cells.nth(2)).toHaveText(sha256(lines[n - 1]!).slice(0, 4));
  }

  // Download: the saved file is what sha256sum verifies.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download script' }).click()]);
  expect(dl.suggestedFilename()).toBe('dashboard-bootstrap-runner');
  const file = await dl.path();
  expect(execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0]).toBe(shown);
  expect(readFileSync(file, 'utf8')).toBe(script);

  await expect(page.getByTestId('runner-unit')).toContainText('Restart=always');
});
