import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { openSecretStore } from '../../main/services/secrets/keytar';
import { OIDC_ACCOUNT } from '../../main/services/vm/remote';
import { storedTokens } from '../../main/vm-api/oidc';
import { oidcWorld, type OidcWorld } from '../vm-api/oidc-world';

let w: OidcWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('the vm-manager OIDC login in the real keychain (gnome-keyring over D-Bus)', () => {
  it('is one keychain entry read back by the next core, replaced by a refresh, removed by logout, in no file of the data dir', async () => {
    const secrets = await openSecretStore();
    expect(secrets.status()).toMatchObject({ backend: 'keytar', available: true });
    w = await oidcWorld(secrets);
    await w.connect();
    expect((await w.login()).error).toBeNull();
    const lookup = () =>
      storedTokens.parse(JSON.parse(execFileSync('secret-tool', ['lookup', 'service', 'povdesk', 'account', OIDC_ACCOUNT]).toString()));
    const first = lookup();
    expect(w.issuer.accepts(first.bearer)).toBe(true);
    await w.snapshot();
    expect((await w.t.call('vm.list', {})).vms).toEqual([]);
    // the next core on the same data directory (an app restart: a new ConnectedVmManager) reads the login from the keychain
    await w.t.restart();
    expect((await w.t.call('vm.connection', {})).tokenSet).toBe(true);
    expect((await w.t.call('vm.list', {})).vms).toEqual([]);
    // the manager stops accepting it: the refresh replaces the entry
    await w.issuer.expireAccessTokens();
    expect((await w.t.call('vm.list', {})).vms).toEqual([]);
    const second = lookup();
    expect(second.bearer).not.toBe(first.bearer);
    await w.snapshot();
    expect(w.leaks()).toEqual([]);
    await w.t.call('vm.logout', {});
    expect(await secrets.get(OIDC_ACCOUNT)).toBeNull();
    await expect(w.t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', detail: { relogin: true } });
  }, 30_000);
});
