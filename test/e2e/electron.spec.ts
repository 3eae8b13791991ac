import { expect, test } from './fixtures';

/** Electron-only checks of the window's security settings, through the real preload. */
test('Electron: the renderer has window.povdesk and no Node, and Settings answers through IPC', async ({ app }) => {
  test.skip(app.mode !== 'electron', 'Electron only (browser mode has no preload)');
  const { page } = app;
  expect(await page.evaluate(() => typeof (window as unknown as { require?: unknown }).require)).toBe('undefined');
  expect(await page.evaluate(() => typeof (window as unknown as { process?: unknown }).process)).toBe('undefined');
  expect(await page.evaluate(() => Object.keys((window as unknown as { povdesk: object }).povdesk).sort())).toEqual([
    'ack',
    'call',
    'subscribe',
    'transport',
  ]);
  await app.open('Settings');
  await expect(page.getByTestId('token-status')).toHaveText(/token (not )?set/);
  await expect(app.call('settings.get', { extra: 1 })).rejects.toThrow(/Unrecognized key/);
});
