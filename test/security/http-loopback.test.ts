import { afterEach, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { HttpControlPlane } from '../../main/services/control-node/control-plane';
import { SkytapClient } from '../../main/services/skytap/client';
import { testCore } from '../foundation/helpers';

// Item 6 of the security review: credentials (Skytap Basic auth, control-plane and remote
// vm-manager bearer tokens) never go over plain http except to this machine's loopback.
describe('plain http only for loopback', () => {
  let core: Core;
  afterEach(async () => core?.close());

  const code = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'ok';
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  };

  it('settings.saveSkytap refuses http:// to another host and keeps what was stored', async () => {
    core = await testCore();
    const call = (url: string) => code(core.dispatcher.call('settings.saveSkytap', { username: 'u', url }, { transport: 'ws' }));
    expect(await call('https://skytap.example.com')).toBe('ok');
    expect(await call('http://skytap.example.com')).toBe('invalid_request');
    expect(await call('http://127.0.0.1.evil.test:8080')).toBe('invalid_request');
    expect(await call('http://localhost.evil.test')).toBe('invalid_request');
    expect(core.base.settings.getValue('skytap.url')).toBe('https://skytap.example.com');
    expect(await call('http://127.0.0.1:8080')).toBe('ok');
    expect(await call('http://localhost:8080/')).toBe('ok');
    expect(await call('http://[::1]:8080')).toBe('ok');
    expect(await call('http://127.8.9.10')).toBe('ok');
  });

  it('vm.setConnection refuses a remote vm-manager on plain http to another host', async () => {
    core = await testCore();
    const call = (url: string) =>
      code(core.dispatcher.call('vm.setConnection', { mode: 'remote', url, token: 'remote-token-1' }, { transport: 'ws' }));
    expect(await call('http://vm.example.com:7000')).toBe('invalid_request');
    expect(core.base.settings.getValue('vm.remoteUrl')).toBeNull();
    expect(await call('https://vm.example.com:7000')).toBe('ok');
    expect(await call('http://127.0.0.1:7000')).toBe('ok');
  });

  it('controlNode.saveSettings refuses a control-plane URL on plain http to another host', async () => {
    core = await testCore();
    const call = (controlPlaneUrl: string) =>
      code(core.dispatcher.call('controlNode.saveSettings', { controlPlaneUrl }, { transport: 'ws' }));
    expect(await call('http://cp.example.com')).toBe('invalid_request');
    expect(core.base.settings.getValue('controlNode.controlPlaneUrl')).toBeNull();
    expect(await call('https://cp.example.com')).toBe('ok');
    expect(await call('http://127.0.0.1:9000')).toBe('ok');
  });

  it('the clients refuse plain http to another host however the URL arrived (environment, old database)', () => {
    const skytap = (baseUrl: string) => () => new SkytapClient({ baseUrl, username: 'u', token: 'tok-123456' });
    expect(skytap('http://skytap.example.com')).toThrow(/http/);
    expect(skytap('http://127.0.0.1:9')).not.toThrow();
    expect(() => new HttpControlPlane('http://cp.example.com', 'cp-token')).toThrow(/http/);
    expect(() => new HttpControlPlane('http://localhost:9', 'cp-token')).not.toThrow();
  });

  it('a remote vm-manager URL stored before this check is refused when used', async () => {
    core = await testCore();
    core.base.settings.setValue('vm.mode', 'remote');
    core.base.settings.setValue('vm.remoteUrl', 'http://vm.example.com:7000');
    await core.base.secrets.set('vm-manager-token', 'remote-token-2');
    expect(await code(core.dispatcher.call('vm.list', {}, { transport: 'ws' }))).toBe('invalid_request');
  });
});
