import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createCore } from '../../main/core/create';
import { openSecretStore } from '../../main/services/secrets/keytar';
import { tempHome } from '../foundation/helpers';

const run = promisify(execFile);

describe('keychain (real gnome-keyring over D-Bus)', () => {
  it('round-trips through keytar and is visible to secret-tool', async () => {
    const store = await openSecretStore();
    expect(store.status()).toMatchObject({ backend: 'keytar', available: true });
    await store.set('test-account', 'v4lue-xyz');
    expect(await store.get('test-account')).toBe('v4lue-xyz');
    expect(execFileSync('secret-tool', ['lookup', 'service', 'povdesk', 'account', 'test-account']).toString()).toBe('v4lue-xyz');
    expect(await store.delete('test-account')).toBe(true);
    expect(await store.get('test-account')).toBeNull();
  });

  it('settings.saveSkytap puts the token in the keychain and nowhere in the data directory', async () => {
    const home = tempHome();
    const core = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test' });
    const token = 'T0ken-' + Date.now();
    const view = await core.dispatcher.call('settings.saveSkytap', { username: 'u', apiToken: token }, { transport: 'test' });
    expect(view).toMatchObject({ skytap: { tokenSet: true, username: 'u' }, keyring: { backend: 'keytar' } });
    expect(JSON.stringify(view)).not.toContain(token);
    await core.close();
    for (const f of readdirSync(home, { recursive: true }) as string[]) {
      const p = join(home, f);
      try {
        expect(readFileSync(p).includes(Buffer.from(token)), p).toBe(false);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EISDIR') throw e;
      }
    }
    const again = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test' });
    expect((await again.base.settings.skytap()).token).toBe(token);
    await again.dispatcher.call('settings.clearSkytapToken', {}, { transport: 'test' });
    expect((await again.base.settings.skytap()).token).toBeNull();
    await again.close();
  });

  it('environment variables override stored settings for the process and are never saved', async () => {
    const home = tempHome();
    const env = { POVDESK_HOME: home, SKYTAP_USERNAME: 'env-user', SKYTAP_API_TOKEN: 'env-token-123', SKYTAP_URL: 'http://127.0.0.1:9' };
    const core = await createCore({ home, env, role: 'test' });
    const view = (await core.dispatcher.call('settings.get', {}, { transport: 'test' })) as {
      skytap: { username: string; tokenSet: boolean; fromEnv: string[] };
    };
    expect(view.skytap).toMatchObject({ username: 'env-user', tokenSet: true });
    expect(view.skytap.fromEnv).toEqual(['SKYTAP_USERNAME', 'SKYTAP_API_TOKEN', 'SKYTAP_URL']);
    await core.close();
    const plain = await createCore({ home, env: { POVDESK_HOME: home }, role: 'test' });
    expect(await plain.base.settings.skytap()).toMatchObject({ username: '', token: null });
    await plain.close();
  });

  it('with no Secret Service the app keeps secrets in memory and says what to do', async () => {
    const script = `
      import { openSecretStore } from '${join(__dirname, '../../main/services/secrets/keytar.ts')}';
      const s = await openSecretStore({ timeoutMs: 3000 });
      console.log(JSON.stringify(s.status()));`;
    const env = { ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus', DISPLAY: '' };
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env });
    const status = JSON.parse(stdout.trim());
    expect(status).toMatchObject({ backend: 'memory', available: false });
    expect(status.remedy).toMatch(/gnome-keyring/);
  }, 30_000);
});
