import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover, pollDeviceToken, refreshTokens, startDeviceLogin } from '../../main/vm-api/oidc';
import { CLIENT_ID, oidcWorld, type OidcWorld } from './oidc-world';
import { TestIssuer } from './issuer';

const http = { timeoutMs: 5000 };

describe('the device-code login against a local OIDC issuer', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await new TestIssuer({ clientId: CLIENT_ID, interval: 2, slowDownOnce: true }).start();
  });
  afterAll(() => issuer.close());

  it('discovers, polls (pending, slow_down adds 5 s to the interval) until approved, then refreshes with a rotated refresh token', async () => {
    const d = await discover(issuer.url, http);
    const auth = await startDeviceLogin(d, CLIENT_ID, 'openid offline_access', http);
    expect(auth.verification_uri_complete).toContain(auth.user_code);
    const waits: number[] = [];
    const tokens = await pollDeviceToken(d, CLIENT_ID, auth, http, {
      sleep: async (ms) => {
        waits.push(ms);
        if (waits.length === 3) issuer.approve(auth.user_code);
      },
    });
    expect(issuer.calls).toEqual(['device:slow_down', 'device:authorization_pending', 'device:tokens']);
    expect(waits).toEqual([2000, 7000, 7000]);
    expect(issuer.accepts(tokens.bearer)).toBe(true);
    expect(tokens.bearer.split('.')).toHaveLength(3); // the id_token, as the cluster's guard expects
    expect(tokens.expiresAt).toBeGreaterThan(Date.now());
    const fresh = await refreshTokens(d, tokens, http);
    expect(fresh.bearer).not.toBe(tokens.bearer);
    expect(fresh.refreshToken).not.toBe(tokens.refreshToken);
    await expect(refreshTokens(d, tokens, http)).rejects.toMatchObject({ relogin: true, message: expect.stringContaining('invalid_grant') });
  });

  it('a denied login, a wrong client id and a wrong issuer are clear errors', async () => {
    const d = await discover(issuer.url, http);
    const auth = await startDeviceLogin(d, CLIENT_ID, 'openid', http);
    issuer.deny(auth.user_code);
    await expect(pollDeviceToken(d, CLIENT_ID, auth, http, { sleep: async () => undefined })).rejects.toMatchObject({ relogin: true, message: expect.stringContaining('denied') });
    await expect(startDeviceLogin(d, 'someone-else', 'openid', http)).rejects.toThrow(/invalid_client.*client id/);
    await expect(discover(`${issuer.url}/other`, http)).rejects.toThrow(/answered 404/);
  });
});

/** The app's flow: settings → vm.login (a job) → calls with the id_token → refresh after a 401 → re-login. */
describe('vm.* with an OIDC login to the cluster', () => {
  let w: OidcWorld;
  beforeAll(async () => {
    w = await oidcWorld(null);
  });
  afterAll(() => w?.close());

  it('not logged in: the call is unauthorized with the re-login flag, and nothing reaches the manager', async () => {
    const conn = await w.t.call('vm.setConnection', { mode: 'remote', url: w.double.url, auth: 'oidc', oidcIssuer: w.issuer.url, oidcClientId: CLIENT_ID });
    expect(conn).toMatchObject({ mode: 'remote', auth: 'oidc', tokenSet: false, oidcIssuer: w.issuer.url, oidcClientId: CLIENT_ID });
    await expect(w.t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', detail: { relogin: true }, message: expect.stringContaining('Log in') });
    expect(w.double.seen).toEqual([]);
  });

  it('logs in with a device code as a job; the tokens go to the keychain and calls carry the id_token', async () => {
    const login = await w.t.call('vm.login', {});
    expect(login.verificationUri).toBe(`${w.issuer.url}/device`);
    expect(w.t.jobs.get(login.jobId)?.progress.message).toContain(login.userCode);
    w.issuer.approve(login.userCode);
    const job = await w.t.jobs.wait(login.jobId);
    expect(job.error).toBeNull();
    await w.snapshot();
    expect(w.seenTokens.size).toBe(2);
    expect((await w.t.call('vm.connection', {})).tokenSet).toBe(true);
    expect((await w.t.call('vm.list', {})).vms).toEqual([]);
    const { jobId } = await w.t.call('vm.create', { name: 'c1', image: 'giantswarm-vm-base', cpus: 1, memoryMib: 512, diskGib: 1, requireAttestation: false });
    expect((await w.t.jobs.wait(jobId)).error).toBeNull();
  }, 20_000);

  it('the manager refuses the token (401): the app refreshes once and the call succeeds', async () => {
    w.issuer.expireAccessTokens();
    const before = w.issuer.calls.filter((c) => c === 'refresh:tokens').length;
    expect((await w.t.call('vm.list', {})).vms.map((v) => v.name)).toEqual(['c1']);
    expect(w.issuer.calls.filter((c) => c === 'refresh:tokens').length).toBe(before + 1);
    expect(w.double.seen.filter((s) => s === 'unauthorized')).toHaveLength(1);
    await w.snapshot();
  });

  it('refresh refused too: unauthorized with the re-login flag, the stale login removed from the keychain', async () => {
    w.issuer.expireAccessTokens();
    w.issuer.revokeRefreshTokens();
    await expect(w.t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', detail: { relogin: true } });
    expect((await w.t.call('vm.connection', {})).tokenSet).toBe(false);
    // and a new login works again
    const login = await w.t.call('vm.login', {});
    w.issuer.approve(login.userCode);
    expect((await w.t.jobs.wait(login.jobId)).error).toBeNull();
    await w.snapshot();
    expect((await w.t.call('vm.list', {})).vms).toHaveLength(1);
  }, 20_000);

  it('no token in the log file or the database', async () => {
    expect(w.seenTokens.size).toBeGreaterThanOrEqual(6);
    w.t.base.log.info('a line that mentions a token by mistake', { detail: [...w.seenTokens][0] });
    expect(readFileSync(w.t.base.log.file!, 'utf8')).toContain('vm-manager connection saved');
    expect(w.leaks()).toEqual([]);
  });
});

describe('a login close to its expiry', () => {
  it('is refreshed before the call, so the manager never sees the old token', async () => {
    const w = await oidcWorld(null, { tokenSeconds: 30 }); // inside the app's 60 s margin
    try {
      await w.t.call('vm.setConnection', { mode: 'remote', url: w.double.url, auth: 'oidc', oidcIssuer: w.issuer.url, oidcClientId: CLIENT_ID });
      const login = await w.t.call('vm.login', {});
      w.issuer.approve(login.userCode);
      expect((await w.t.jobs.wait(login.jobId)).error).toBeNull();
      expect((await w.t.call('vm.list', {})).vms).toEqual([]);
      expect(w.issuer.calls.at(-1)).toBe('refresh:tokens');
      expect(w.double.seen).toEqual(['listVMs']);
    } finally {
      await w.close();
    }
  }, 20_000);
});
