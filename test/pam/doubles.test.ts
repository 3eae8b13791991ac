import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EntitleClient } from '../../main/services/pam/entitle';
import { PasswordSafeClient } from '../../main/services/pam/password-safe';
import { PraClient } from '../../main/services/pam/pra';
import { testTenant } from '../../main/services/pam/test-tenant';
import { EntitleDouble } from '../pam-doubles/entitle-double';
import { PasswordSafeDouble } from '../pam-doubles/password-safe-double';
import { PraDouble } from '../pam-doubles/pra-double';

/** The doubles behave as the specs say, and the clients cope with what the specs say. */
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});
async function started<T extends { start(): Promise<T>; stop(): Promise<void> }>(d: T): Promise<T> {
  await d.start();
  stops.push(() => d.stop());
  return d;
}
const basic = (id: string, s: string) => `Basic ${Buffer.from(`${id}:${s}`).toString('base64')}`;
async function token(pra: PraDouble, id = 'acct', secret = 'sec') {
  const r = await fetch(`${pra.url}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  return { status: r.status, json: (await r.json()) as { access_token: string; expires_in: number } };
}
const get = (pra: PraDouble, t: string, path: string) =>
  fetch(`${pra.url}/api/config/v1${path}`, { headers: { authorization: `Bearer ${t}` } });
const post = (pra: PraDouble, t: string, path: string, body: unknown) =>
  fetch(`${pra.url}/api/config/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('PRA double', () => {
  it('OAuth: 3600 s tokens, at most 30 live per account (the 31st invalidates the oldest), expiry enforced', async () => {
    let now = Date.parse('2026-12-01T10:00:00Z');
    const pra = await started(new PraDouble(() => now));
    pra.addApiAccount('acct', 'sec');
    expect((await token(pra, 'acct', 'wrong')).status).toBe(401);
    const first = await token(pra);
    expect(first.json.expires_in).toBe(3600);
    for (let i = 0; i < 29; i++) await token(pra);
    expect((await get(pra, first.json.access_token, '/jump-group')).status).toBe(200);
    const t31 = (await token(pra)).json.access_token;
    expect((await get(pra, first.json.access_token, '/jump-group')).status).toBe(401);
    expect((await get(pra, t31, '/jump-group')).status).toBe(200);
    now += 3601_000;
    expect((await get(pra, t31, '/jump-group')).status).toBe(401);
  });

  it('401 on an unknown query parameter or body field; 422 bags; integers must be numbers; per-type ids; cascade', async () => {
    const pra = await started(new PraDouble());
    pra.addApiAccount('acct', 'sec');
    const t = (await token(pra)).json.access_token;
    expect((await get(pra, t, '/jumpoint?tag=x')).status).toBe(401);
    expect((await post(pra, t, '/jump-group', { name: 'g', colour: 'red' })).status).toBe(401);
    const bad = await post(pra, t, '/jumpoint', { name: '', platform: 'mac' });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({
      message: expect.any(String),
      errors: { name: [expect.any(String)], platform: [expect.any(String)] },
    });
    const jp = (await (
      await post(pra, t, '/jumpoint', { name: 'gw', platform: 'linux-x86', clustered: true, code_name: 'pov_1' })
    ).json()) as { id: number; connected: boolean; docker_deploy_key: string };
    expect(jp.connected).toBe(false);
    expect(jp.docker_deploy_key).toMatch(/^dk_/);
    const g = (await (await post(pra, t, '/jump-group', { name: 'g', code_name: 'pov_1' })).json()) as { id: number };
    expect((await post(pra, t, '/jump-group', { name: 'G' })).status).toBe(422); // names are unique, case-insensitively
    const str = await post(pra, t, '/jump-item/shell-jump', {
      name: 'a',
      jumpoint_id: String(jp.id),
      hostname: '10.0.0.1',
      protocol: 'ssh',
      jump_group_id: g.id,
    });
    expect(str.status).toBe(422);
    expect(((await str.json()) as { errors: Record<string, unknown> }).errors.jumpoint_id).toBeDefined();
    const sj = (await (
      await post(pra, t, '/jump-item/shell-jump', {
        name: 'a',
        jumpoint_id: jp.id,
        hostname: '10.0.0.1',
        protocol: 'ssh',
        jump_group_id: g.id,
      })
    ).json()) as { id: number; port: number };
    const rdp = (await (
      await post(pra, t, '/jump-item/remote-rdp', { name: 'b', jumpoint_id: jp.id, hostname: '10.0.0.2', jump_group_id: g.id })
    ).json()) as { id: number };
    expect([sj.id, rdp.id, sj.port]).toEqual([1, 1, 22]);
    expect((await get(pra, t, '/jump-item/remote-rdp/2')).status).toBe(404);
    expect(pra.checkIn(jp.docker_deploy_key, { hostname: 'cn', private_ip: '10.0.0.9' })).toBe(true);
    expect(((await (await get(pra, t, `/jumpoint/${jp.id}`)).json()) as { connected: boolean }).connected).toBe(true);
    expect(await (await get(pra, t, `/jumpoint/${jp.id}/node`)).json()).toEqual([
      expect.objectContaining({ hostname: 'cn', private_ip: '10.0.0.9' }),
    ]);
    expect(
      (await fetch(`${pra.url}/api/config/v1/jumpoint/${jp.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${t}` } })).status,
    ).toBe(204);
    expect(pra.store['shell-jump'].size + pra.store['remote-rdp'].size).toBe(0);
  });

  it('pages with X-BT-Pagination-* and Link; the client walks every page', async () => {
    const pra = await started(new PraDouble());
    pra.addApiAccount('acct', 'sec');
    for (let i = 1; i <= 105; i++) pra.store['jump-group'].set(i, { id: i, name: `g${i}`, code_name: `c${i}` });
    const t = (await token(pra)).json.access_token;
    const r = await get(pra, t, '/jump-group?per_page=5&current_page=2');
    expect(r.headers.get('x-bt-pagination-last-page')).toBe('21');
    expect(r.headers.get('x-bt-pagination-total')).toBe('105');
    expect(r.headers.get('link')).toMatch(/current_page=3>; rel="next"/);
    expect((await get(pra, t, '/jump-group?per_page=500')).status).toBe(422);
    const client = new PraClient({ site: pra.url, clientId: 'acct', clientSecret: 'sec' });
    expect(await client.list('/jump-group', z.object({ id: z.number() }).loose())).toHaveLength(105);
    expect(pra.requests.filter((q) => q.path === '/api/config/v1/jump-group' && q.query.per_page === '100')).toHaveLength(2);
  });

  it('throttles at 20 requests/s with X-RateLimit-*; the client waits out Retry-After; a refused token is renewed once', async () => {
    const pra = await started(new PraDouble());
    pra.addApiAccount('acct', 'sec');
    const waits: number[] = [];
    const client = new PraClient(
      { site: pra.url, clientId: 'acct', clientSecret: 'sec' },
      { sleep: (ms) => (waits.push(ms), new Promise((r) => setTimeout(r, ms))) },
    );
    const answers = await Promise.all(Array.from({ length: 25 }, () => client.api('GET', '/jump-group')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((w) => w === 1000)).toBe(true);
    const limited = pra.requests.find((q) => q.status === 429)!;
    expect(limited).toBeDefined();
    expect(answers[0]!.headers['x-ratelimit-limit']).toBe('20');
    // 30 tokens minted elsewhere invalidate the client's cached one: it fetches a new one and goes on.
    for (let i = 0; i < 30; i++) await token(pra);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await client.api('GET', '/jump-group')).status).toBe(200);
  }, 20_000);
});

describe('Password Safe double', () => {
  it('PS-Auth and OAuth sign in to a cookie session; calls need it; Signout ends it; ?version= is checked', async () => {
    const ps = await started(new PasswordSafeDouble());
    ps.apiKeys.set('k1', { runAs: 'svc', password: 'pw' });
    ps.oauthClients.set('cid', 'csecret');
    await expect(new PasswordSafeClient({ url: ps.url, apiKey: 'k1', runAs: 'svc' }).signIn()).rejects.toMatchObject({
      code: 'unauthorized',
    });
    const c = new PasswordSafeClient({ url: ps.url, apiKey: 'k1', runAs: 'svc', runAsPassword: 'pw' });
    await c.session(async () => expect(await c.workgroups()).toEqual([]));
    expect(ps.signIns).toHaveLength(1);
    expect(ps.signOuts).toHaveLength(1);
    expect(ps.sessions.size).toBe(0);
    const noCookie = await fetch(`${ps.url}/BeyondTrust/api/public/v3/Workgroups?version=3.1`);
    expect(noCookie.status).toBe(401);
    expect((await fetch(`${ps.url}/BeyondTrust/api/public/v3/Workgroups?version=9.9`)).status).toBe(400);
    const o = new PasswordSafeClient({ url: ps.url, clientId: 'cid', clientSecret: 'csecret' });
    await o.session(async () => expect((await o.createWorkgroup('wg')).Name).toBe('wg'));
    expect(ps.versionsSeen).toEqual(new Set(['3.1', '9.9']));
  });

  it('required-if: FunctionalAccountID when auto-managed, ChangeFrequencyDays for xdays, a password unless auto-managed', async () => {
    const ps = await started(new PasswordSafeDouble());
    ps.apiKeys.set('k1', { runAs: 'svc', password: null });
    const c = new PasswordSafeClient({ url: ps.url, apiKey: 'k1', runAs: 'svc' });
    await c.session(async () => {
      const wg = await c.createWorkgroup('wg');
      const a = await c.createAsset(wg.ID, { IPAddress: '10.0.0.5', AssetName: 'lin', OperatingSystem: 'Linux', Description: '' });
      const base = { PlatformID: 2, ReleaseDuration: 120, ChangeFrequencyType: 'first', ChangeTime: '23:30' };
      await expect(c.createManagedSystem(a.AssetID, { ...base, AutoManagementFlag: true })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('FunctionalAccountID is required'),
      });
      await expect(c.createManagedSystem(a.AssetID, { ...base, ChangeFrequencyType: 'xdays' })).rejects.toMatchObject({
        message: expect.stringContaining('ChangeFrequencyDays'),
      });
      await expect(c.createManagedSystem(a.AssetID, { ...base, ReleaseDuration: 600000 })).rejects.toMatchObject({
        code: 'invalid_request',
      });
      const sys = await c.createManagedSystem(a.AssetID, base);
      await expect(
        c.createManagedAccount(sys.ManagedSystemID, { AccountName: 'x', AutoManagementFlag: false, Description: '' }),
      ).rejects.toMatchObject({ message: expect.stringContaining('Password is required') });
    });
  });
});

describe('Entitle double', () => {
  it('{result, pagination} envelopes walked to the end; agent tokens shown once; 429 with Retry-After honoured', async () => {
    const en = await started(new EntitleDouble());
    const integ = en.addIntegration('PRA', 'BeyondTrust Privileged Remote Access');
    for (let i = 0; i < 150; i++) en.resources.set(`r${i}`, { id: `r${i}`, name: `res ${i}`, integration: { id: integ.id } });
    const waits: number[] = [];
    const c = new EntitleClient({ url: en.url, token: en.token }, { sleep: async (ms) => void waits.push(ms) });
    expect(await c.list('/resources', z.object({ id: z.string() }).loose(), { integrationId: integ.id })).toHaveLength(150);
    // integrationId required
    expect((await fetch(`${en.url}/public/v1/resources`, { headers: { authorization: `Bearer ${en.token}` } })).status).toBe(400);

    const created = (await c.call('POST', '/agentTokens', { body: { name: 'agent' } })).json as { result: { id: string; token: string } };
    expect(created.result.token).toMatch(/^eat_/);
    const listed = JSON.stringify((await c.call('GET', '/agentTokens')).json);
    const one = JSON.stringify((await c.call('GET', `/agentTokens/${created.result.id}`)).json);
    expect(listed).not.toContain(created.result.token);
    expect(one).not.toContain(created.result.token);

    en.throttleNext(2);
    expect((await c.praIntegration())?.id).toBe(integ.id);
    expect(waits).toEqual([1000, 1000]);
    expect(en.requests.filter((r) => r.status === 429)).toHaveLength(2);
  });
});

describe('pam.test outcomes', () => {
  it('ok, not_configured, unauthorized, permission_missing and failed (network) per product', async () => {
    const pra = await started(new PraDouble());
    pra.addApiAccount('acct', 'sec');
    const ps = await started(new PasswordSafeDouble());
    ps.apiKeys.set('k', { runAs: 'svc', password: null });
    const en = await started(new EntitleDouble());
    const none = {
      pra: null,
      ps: null,
      entitle: null,
      brokerInstallKey: null,
      functionalAccounts: {},
      managedAccounts: { linux: [], windows: [] },
    };
    const good = {
      ...none,
      pra: { site: pra.url, clientId: 'acct', clientSecret: 'sec' },
      ps: { url: ps.url, apiKey: 'k', runAs: 'svc' },
      entitle: { url: en.url, token: en.token },
    };
    for (const product of ['pra', 'passwordSafe', 'entitle'] as const) {
      expect(await testTenant(product, good)).toMatchObject({ outcome: 'ok', good: true });
      expect(await testTenant(product, none)).toMatchObject({ outcome: 'not_configured', good: false });
    }
    const wrong = {
      ...none,
      pra: { site: pra.url, clientId: 'acct', clientSecret: 'nope' },
      ps: { url: ps.url, apiKey: 'x', runAs: 'svc' },
      entitle: { url: en.url, token: 'nope' },
    };
    for (const product of ['pra', 'passwordSafe', 'entitle'] as const)
      expect(await testTenant(product, wrong)).toMatchObject({ outcome: 'unauthorized', remedy: expect.any(String) });
    ps.denied.add('Workgroups');
    expect(await testTenant('passwordSafe', good)).toMatchObject({ outcome: 'permission_missing' });
    const gone = await new PraDouble().start();
    const dead = gone.url; // a port nothing listens on any more
    await gone.stop();
    expect(await testTenant('pra', { ...none, pra: { site: dead, clientId: 'a', clientSecret: 'b' } })).toMatchObject({
      outcome: 'failed',
      reason: 'network',
    });
  });
});
