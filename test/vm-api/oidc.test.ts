import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_ACCOUNT } from '../../main/services/vm/remote';
import { discover, pollDeviceToken, refreshTokens, startDeviceLogin } from '../../main/vm-api/oidc';
import { CLIENT_ID, oidcWorld, type OidcWorld } from './oidc-world';
import { TestIssuer } from './issuer';

/**
 * The login against oidc-provider (the certified implementation) over https with a private CA:
 * the client side is openid-client, through main/vm-api/oidc.ts.
 */
describe('the device-code login against oidc-provider', () => {
  let issuer: TestIssuer;
  let http: { timeoutMs: number; ca: string };
  beforeAll(async () => {
    issuer = await new TestIssuer({ clientId: CLIENT_ID, interval: 1, slowDownOnce: true }).start();
    http = { timeoutMs: 5000, ca: issuer.ca };
  });
  afterAll(() => issuer.close());

  it('discovers, backs off on slow_down (interval + 5 s), gets verified tokens, and refresh rotates the refresh token', async () => {
    const d = await discover(issuer.url, CLIENT_ID, http);
    const auth = await startDeviceLogin(d, 'openid offline_access');
    expect(auth.verification_uri_complete).toContain(auth.user_code);
    expect(auth.interval).toBe(1);
    const polling = pollDeviceToken(d, auth);
    while (issuer.calls.length === 0) await new Promise((r) => setTimeout(r, 50));
    await issuer.approve(auth.user_code);
    const tokens = await polling;
    expect(issuer.calls).toEqual(['device:slow_down', 'device:tokens']);
    expect(issuer.callTimes[1]! - issuer.callTimes[0]!).toBeGreaterThanOrEqual(5900); // 1 s + 5 s after slow_down
    expect(issuer.accepts(tokens.bearer)).toBe(true);
    expect(tokens.bearer.split('.')).toHaveLength(3); // the id_token, as the cluster's guard expects
    expect(tokens.expiresAt).toBeGreaterThan(Date.now());
    const fresh = await refreshTokens(d, tokens);
    expect(issuer.accepts(fresh.bearer)).toBe(true);
    expect(fresh.refreshToken).not.toBe(tokens.refreshToken);
    // rotation: the old refresh token is spent, and a refused refresh means a new login
    await expect(refreshTokens(d, tokens)).rejects.toMatchObject({ relogin: true, message: expect.stringContaining('invalid_grant') });
  }, 20_000);

  it('an id_token signed by another key than the JWKS publishes is refused, on login and on refresh', async () => {
    const d = await discover(issuer.url, CLIENT_ID, http);
    const auth = await startDeviceLogin(d, 'openid offline_access');
    await issuer.approve(auth.user_code);
    const good = await pollDeviceToken(d, auth);
    issuer.foreignKeys = true;
    try {
      const d2 = await discover(issuer.url, CLIENT_ID, http); // a fresh JWKS cache
      await expect(refreshTokens(d2, good)).rejects.toMatchObject({
        relogin: false,
        message: expect.stringMatching(/id_token .* failed verification/),
      });
      const auth2 = await startDeviceLogin(d2, 'openid offline_access');
      await issuer.approve(auth2.user_code);
      await expect(pollDeviceToken(d2, auth2)).rejects.toThrow(/failed verification/);
    } finally {
      issuer.foreignKeys = false;
    }
  }, 20_000);

  it('a denied login, a wrong client id, a wrong issuer and a missing CA are clear errors', async () => {
    const d = await discover(issuer.url, CLIENT_ID, http);
    const auth = await startDeviceLogin(d, 'openid');
    await issuer.deny(auth.user_code);
    await expect(pollDeviceToken(d, auth)).rejects.toMatchObject({ relogin: true, message: expect.stringContaining('denied') });
    const stranger = await discover(issuer.url, 'someone-else', http);
    await expect(startDeviceLogin(stranger, 'openid')).rejects.toThrow(/invalid_client.*client id/);
    await expect(discover(`${issuer.url}/other`, CLIENT_ID, http)).rejects.toThrow(/answered 404.*check the issuer URL/);
    await expect(discover(issuer.url, CLIENT_ID, { timeoutMs: 5000 })).rejects.toThrow(/cannot reach the issuer.*CA bundle/);
  }, 20_000);
});

/** The app's flow: settings → vm.login (a job) → calls with the id_token → refresh after a 401 → re-login. */
describe('vm.* with an OIDC login to the cluster', () => {
  let w: OidcWorld;
  beforeAll(async () => {
    w = await oidcWorld(null);
  });
  afterAll(() => w?.close());

  it('not logged in: the call is unauthorized with the re-login flag, and nothing reaches the manager', async () => {
    const conn = await w.connect();
    expect(conn).toMatchObject({ mode: 'remote', auth: 'oidc', tokenSet: false, oidcIssuer: w.issuer.url, oidcClientId: CLIENT_ID });
    await expect(w.t.call('vm.list', {})).rejects.toMatchObject({
      code: 'unauthorized',
      detail: { relogin: true },
      message: expect.stringContaining('Log in'),
    });
    expect(w.double.seen).toEqual([]);
  });

  it('logs in with a device code as a job; the tokens go to the keychain and calls carry the id_token', async () => {
    const login = await w.t.call('vm.login', {});
    expect(login.verificationUri).toBe(`${w.issuer.url}/device`);
    expect(w.t.jobs.get(login.jobId)?.progress.message).toContain(login.userCode);
    await w.issuer.approve(login.userCode);
    const job = await w.t.jobs.wait(login.jobId);
    expect(job.error).toBeNull();
    await w.snapshot();
    expect(w.seenTokens.size).toBe(2);
    expect((await w.t.call('vm.connection', {})).tokenSet).toBe(true);
    expect((await w.t.call('vm.list', {})).vms).toEqual([]);
    const { jobId } = await w.t.call('vm.create', {
      name: 'c1',
      image: 'giantswarm-vm-base',
      cpus: 1,
      memoryMib: 512,
      diskGib: 1,
      requireAttestation: false,
    });
    expect((await w.t.jobs.wait(jobId)).error).toBeNull();
  }, 20_000);

  it('the manager refuses the token (401): the app refreshes once and the call succeeds', async () => {
    await w.issuer.expireAccessTokens();
    const before = w.issuer.calls.filter((c) => c === 'refresh:tokens').length;
    expect((await w.t.call('vm.list', {})).vms.map((v) => v.name)).toEqual(['c1']);
    expect(w.issuer.calls.filter((c) => c === 'refresh:tokens').length).toBe(before + 1);
    expect(w.double.seen.filter((s) => s === 'unauthorized')).toHaveLength(1);
    await w.snapshot();
  });

  it('a refreshed id_token signed by another key is neither stored nor sent', async () => {
    const kept = await w.secrets.get(OIDC_ACCOUNT);
    await w.issuer.expireAccessTokens();
    w.issuer.foreignKeys = true;
    try {
      const seen = w.double.seen.length;
      await expect(w.t.call('vm.list', {})).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/failed verification/),
      });
      expect(w.double.seen.slice(seen)).toEqual(['unauthorized']); // the old token once, never a new one
      expect(await w.secrets.get(OIDC_ACCOUNT)).toBe(kept);
    } finally {
      w.issuer.foreignKeys = false;
    }
  });

  it('refresh refused too: unauthorized with the re-login flag, the stale login removed from the keychain', async () => {
    await w.issuer.expireAccessTokens();
    await w.issuer.revokeRefreshTokens();
    await expect(w.t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', detail: { relogin: true } });
    expect((await w.t.call('vm.connection', {})).tokenSet).toBe(false);
    // and a new login works again
    expect((await w.login()).error).toBeNull();
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
    const w = await oidcWorld(null, { tokenSeconds: 50 }); // inside the app's 60 s margin
    try {
      await w.connect();
      expect((await w.login()).error).toBeNull();
      expect((await w.t.call('vm.list', {})).vms).toEqual([]);
      expect(w.issuer.calls.at(-1)).toBe('refresh:tokens');
      expect(w.double.seen).toEqual(['listVMs']);
    } finally {
      await w.close();
    }
  }, 20_000);
});
