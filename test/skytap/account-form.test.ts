import { afterEach, describe, expect, it } from 'vitest';
import { coreWorld, type CoreWorld } from '../pov/helpers';

/**
 * Settings → Skytap through the real core and the emulator: Test connection tests the form as
 * typed (each field left out is the saved one; the saved token never goes to another URL), and
 * "Remove Skytap account" forgets username, token, URL and project so the app is as on first launch.
 */
let w: CoreWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('Skytap account: test the form, remove the account', () => {
  it('tests a filled-in form that was never saved', async () => {
    w = await coreWorld({ noSkytap: true });
    // nothing saved: the form alone is enough
    const r = await w.call('skytap.testForm', { username: 'demo', apiToken: 'demo-token', url: w.emu.url, projectId: '' });
    expect(r).toMatchObject({ outcome: 'ok', good: true, templateCount: 3, scope: 'account' });
    // the form's project id and token are what is tested, not the (empty) saved ones
    expect(await w.call('skytap.testForm', { username: 'demo', apiToken: 'demo-token', url: w.emu.url, projectId: '999' })).toMatchObject({
      outcome: 'project_not_found',
    });
    expect(await w.call('skytap.testForm', { username: 'demo', apiToken: 'my-password', url: w.emu.url })).toMatchObject({
      outcome: 'unauthorized',
    });
    // an incomplete form says what to fill in, once
    await expect(w.call('skytap.testForm', { username: 'demo', url: w.emu.url })).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'Enter the Skytap API token above to test (the token is the API security token on your Skytap Account page).',
    });
    // nothing was saved by testing
    expect((await w.call('settings.get', {})).skytap).toMatchObject({ username: '', tokenSet: false });
  });

  it('a blank token field uses the saved token, but only at the saved URL', async () => {
    w = await coreWorld();
    expect(await w.call('skytap.testForm', { username: 'demo', url: w.emu.url, projectId: '77' })).toMatchObject({
      outcome: 'ok',
      scope: 'project',
    });
    await expect(w.call('skytap.testForm', { username: 'demo', url: 'https://skytap.example.test' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('type the token into the form'),
    });
    // no fields at all: the saved settings, as the CLI and agents call it
    expect(await w.call('skytap.testConnection', {})).toMatchObject({ outcome: 'ok' });
  });

  it('Remove Skytap account clears username, token, URL and project id', async () => {
    w = await coreWorld();
    await w.call('settings.saveSkytap', { username: 'demo', url: w.emu.url, projectId: '77' });
    expect((await w.call('settings.get', {})).skytap).toMatchObject({ username: 'demo', tokenSet: true, projectId: '77' });
    const view = await w.call('settings.removeSkytap', {});
    expect(view.skytap).toEqual({ username: '', url: 'https://cloud.skytap.com', projectId: '', tokenSet: false, fromEnv: [] });
    expect(await w.call('settings.get', {})).toEqual(view);
    expect(w.db.prepare("SELECT key FROM settings WHERE key LIKE 'skytap.%'").all()).toEqual([]);
    await expect(w.call('skytap.testConnection', {})).rejects.toMatchObject({ code: 'unauthorized' });
    // a second removal is harmless
    expect((await w.call('settings.removeSkytap', {})).skytap.tokenSet).toBe(false);
  });
});
