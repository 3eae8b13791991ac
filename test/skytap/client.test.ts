import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import { BUDGETS, SkytapClient, USER_DATA_MAX, parseContentRange, parseRetryAfter } from '../../main/services/skytap/client';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, failure, recordingSleep } from './helpers';

describe('skytap client: requests', () => {
  it('sends HTTP Basic username:token and Accept: application/json', async () => {
    const emu = await emulator({ seed: SEEDS.demo, credentials: { username: 'alice', token: 's3cr:et' } });
    const { c } = client(emu);
    await c.listTemplates();
    expect(emu.requests[0]!.auth).toEqual({ username: 'alice', token: 's3cr:et' });
  });

  it('adds keep_idle=true to every read and to no write', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, runstateBusyMs: 0, deleteMs: 0 } });
    const { c } = client(emu);
    await c.listTemplates();
    await c.listTemplatesPage(10, 0);
    const env = await c.createEnvironment({ templateId: '500', name: 'kept idle' });
    await c.getEnvironment(env.id);
    await c.listEnvironments();
    const vms = await c.listVms(env.id);
    await c.setVmUserData(env.id, vms[0]!.id, 'hello');
    await c.getVmUserData(env.id, vms[0]!.id);
    await c.setRunstate(env.id, 'running');
    await c.getTemplate('500');
    await c.deleteEnvironment(env.id);
    const reads = emu.requests.filter((r) => r.method === 'GET');
    const writes = emu.requests.filter((r) => r.method !== 'GET');
    expect(reads.length).toBeGreaterThanOrEqual(7);
    for (const r of reads) expect(r.query.keep_idle, `${r.method} ${r.path}`).toBe('true');
    expect(writes.length).toBe(4);
    for (const w of writes) expect(w.query.keep_idle, `${w.method} ${w.path}`).toBeUndefined();
  });

  it('defaults the base URL to https://cloud.skytap.com and refuses a non-http URL', () => {
    const c = new SkytapClient({ baseUrl: '', username: 'u', token: 't' });
    expect(c.baseUrl).toBe('https://cloud.skytap.com');
    expect(() => new SkytapClient({ baseUrl: 'ftp://x', username: 'u', token: 't' })).toThrow(/http/);
    expect(() => new SkytapClient({ baseUrl: 'https://x', username: 'u', token: '' })).toThrow(/token/);
  });

  it('rejects ids that would change the path', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu);
    const e = await failure(c.getEnvironment('../templates'));
    expect(e.code).toBe('invalid_request');
    expect(emu.requests).toHaveLength(0);
  });
});

describe('skytap client: pagination', () => {
  it('walks a collection by count/offset with page size 100 to the reported total', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 250) });
    const { c } = client(emu);
    const envs = await c.listEnvironments();
    expect(envs).toHaveLength(250);
    expect(new Set(envs.map((e) => e.id)).size).toBe(250);
    const pages = emu.requests.filter((r) => r.path === '/v2/configurations');
    expect(pages.map((r) => [r.query.count, r.query.offset])).toEqual([
      ['100', '0'],
      ['100', '100'],
      ['100', '200'],
    ]);
  });

  it('makes exactly one request for an exact multiple of the page size, and one for an empty collection', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 200) });
    const { c } = client(emu);
    expect(await c.listEnvironments()).toHaveLength(200);
    expect(emu.count('GET /v2/configurations')).toBe(2);
    const empty = await emulator();
    const { c: c2 } = client(empty);
    expect(await c2.listEnvironments()).toEqual([]);
    expect(empty.count('GET /v2/configurations')).toBe(1);
  });

  it('reports the total from Content-Range for a single page', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 130) });
    const { c } = client(emu);
    const page = await c.listTemplatesPage(100, 0);
    expect(page.total).toBe(1);
    expect(page.items[0]!.name).toBe('Bulk template');
  });

  it('treats a page shorter than promised before the total as an error, not the end', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 250) });
    emu.faults.push({ match: 'GET /v2/configurations', kind: 'shortPage' });
    const { c } = client(emu);
    const e = await failure(c.listEnvironments());
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/99 items at offset 0 where 100 were promised/);
    expect(e.detail.reason).toBe('server');
  });

  it('treats a short page on the last page as an error too', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 150) });
    let n = 0;
    emu.faults.push({ match: (r) => r.path === '/v2/configurations' && ++n === 2, kind: 'shortPage' });
    const { c } = client(emu);
    const e = await failure(c.listEnvironments());
    expect(e.message).toMatch(/49 items at offset 100 where 50 were promised/);
  });

  it('treats a page whose own Content-Range admits fewer items than the total implies as an error', async () => {
    const emu = await emulator();
    const items = Array.from({ length: 99 }, (_, i) => ({ id: String(i + 1), name: `e${i}`, runstate: 'running' }));
    emu.faults.push({
      match: 'GET /v2/configurations',
      status: 200,
      body: JSON.stringify(items),
      headers: { 'content-range': 'items 0-98/250' },
    });
    const { c } = client(emu);
    const e = await failure(c.listEnvironments());
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/99 items at offset 0 where 100 were promised \(total 250\)/);
  });

  it('a single page whose body is shorter than its own Content-Range is an error', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', kind: 'shortPage' });
    const { c } = client(emu);
    const e = await failure(c.listTemplatesPage(100, 0));
    expect(e.message).toMatch(/2 items at offset 0 where 3 were promised/);
  });

  it('refuses a page whose Content-Range starts elsewhere than the requested offset', async () => {
    const emu = await emulator();
    emu.faults.push({
      match: 'GET /v2/configurations',
      status: 200,
      body: JSON.stringify([{ id: '1', name: 'a', runstate: 'running' }]),
      headers: { 'content-range': 'items 5-5/6' },
    });
    const { c } = client(emu);
    const e = await failure(c.listEnvironments());
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/starts at 5, not at the requested offset 0/);
  });

  it('takes a reply without Content-Range as the whole rest of the collection, however long', async () => {
    const emu = await emulator();
    const vms = Array.from({ length: 150 }, (_, i) => ({ id: String(i + 1), name: `vm${i}`, runstate: 'stopped' }));
    emu.faults.push({ match: 'GET /v2/configurations/*/vms', status: 200, body: JSON.stringify(vms) });
    const { c } = client(emu);
    expect(await c.listVms('1000')).toHaveLength(150);
    expect(emu.requests).toHaveLength(1);
  });

  it('parses Content-Range with or without the unit, empty ranges, and refuses nonsense', () => {
    expect(parseContentRange('items 0-99/2000')).toEqual({ first: 0, last: 99, total: 2000 });
    expect(parseContentRange('0-9/10')).toEqual({ first: 0, last: 9, total: 10 });
    expect(parseContentRange('items */0')).toEqual({ first: null, last: null, total: 0 });
    expect(parseContentRange(undefined)).toBeNull();
    expect(parseContentRange('items lots')).toBe('invalid');
    expect(parseContentRange('items 9-3/10')).toBe('invalid');
  });
});

describe('skytap client: project scope', () => {
  it('uses /v2/projects/{id}/templates and /configurations when a Project ID is set', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu, { projectId: '77' });
    const templates = await c.listTemplates();
    expect(templates.map((t) => t.name)).toEqual(['PAM POV – Linux + Windows']);
    const created = await c.createEnvironment({ templateId: '500', name: 'in project' });
    const { c: unscoped } = client(emu);
    await unscoped.createEnvironment({ templateId: '501', name: 'outside' });
    const envs = await c.listEnvironments();
    expect(envs.map((e) => e.id)).toEqual([created.id]);
    expect(emu.count('GET /v2/projects/77/templates')).toBe(1);
    expect(emu.count('GET /v2/projects/77/configurations')).toBe(1);
    expect(emu.count('GET /v2/templates')).toBe(0);
    expect(emu.requests.find((r) => r.method === 'POST')!.body).toMatchObject({ project_id: 77 });
  });

  it('turns a 404 on a project path into a message naming the remedy', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu, { projectId: '999' });
    for (const p of [c.listTemplates(), c.listEnvironments()]) {
      const e = await failure(p);
      expect(e.code).toBe('not_found');
      expect(e.message).toMatch(/project 999/);
      expect(e.message).toMatch(/Check the Project ID/);
      expect(e.message).toMatch(/token's access/);
    }
  });
});

describe('skytap client: errors', () => {
  it('401 says Skytap wants the API security token, not the password', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu, { token: 'my-account-password' });
    const e = await failure(c.listTemplates());
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe('unauthorized');
    expect(e.message).toMatch(/API security token from your Account page, not the account password/);
    expect(emu.requests).toHaveLength(1);
  });

  it('a 422 that is not busy is a validation error carrying Skytap’s message, not retried', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'POST /configurations', status: 422, message: 'Name contains invalid characters' });
    const { c } = client(emu);
    const e = await failure(c.createEnvironment({ templateId: '500', name: 'x' }));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toMatch(/Name contains invalid characters/);
    expect(emu.count('POST /configurations')).toBe(1);
  });

  it('403 is forbidden and 409 a conflict, each with Skytap’s message', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 403, message: 'You do not have sufficient privileges' });
    const { c } = client(emu);
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('forbidden');
    expect(e.message).toMatch(/sufficient privileges/);
    emu.faults.push({ match: 'PUT /configurations/*', status: 409, message: 'Conflict on name' });
    const e2 = await failure(c.setRunstate('1000', 'running'));
    expect(e2.code).toBe('conflict');
    expect(e2.message).toMatch(/Conflict on name/);
  });

  it('never puts the token in an error', async () => {
    const emu = await emulator({ seed: SEEDS.demo, credentials: { username: 'u', token: 'tok-XYZ-123' } });
    emu.faults.push({ match: 'GET /v2/templates', status: 500, times: Infinity });
    const { c } = client(emu);
    const e = await failure(c.listTemplates());
    expect(JSON.stringify({ m: e.message, d: e.detail })).not.toMatch(/tok-XYZ-123|dG9rLVhZWi0xMjM/);
  });

  it('refuses a reply over the size limit instead of buffering it, without retrying', async () => {
    const emu = await emulator({ seed: (st) => SEEDS.many(st, 50) });
    const { c } = client(emu, { maxReplyBytes: 4096 });
    const e = await failure(c.listEnvironments());
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/over 4096 bytes/);
    expect(emu.requests).toHaveLength(1);
  });

  it('an unexpected shape is an internal error that names the field', async () => {
    const emu = await emulator();
    emu.faults.push({ match: 'GET /v2/configurations/5', status: 200, body: JSON.stringify({ id: '5', name: 'x', runstate: 'exploded' }) });
    const { c } = client(emu);
    const e = await failure(c.getEnvironment('5'));
    expect(e.code).toBe('internal');
    expect(e.message).toMatch(/field runstate/);
    expect(e.detail.field).toBe('runstate');
    emu.faults.push({ match: 'GET /v2/templates', status: 200, body: JSON.stringify([{ id: 7, name: 'numeric id' }]) });
    const e2 = await failure(c.listTemplates());
    expect(e2.message).toMatch(/field 0\.id/);
  });

  it('malformed JSON on a read is retried, then reported as an unreadable reply (server)', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', kind: 'malformed', times: Infinity });
    const { c } = client(emu);
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('server');
    expect(e.message).toMatch(/could not be read \(not JSON/);
    expect(emu.count('GET /v2/templates')).toBe(4); // 1 + 3 fault retries
  });

  it('a truncated body is a network failure (retried for reads, then reported)', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', kind: 'truncated' });
    const { c, retries } = client(emu);
    expect(await c.listTemplates()).toHaveLength(3);
    expect(retries).toEqual([{ status: 0, waitMs: 500, attempt: 1 }]);
    emu.faults.push({ match: 'GET /v2/templates', kind: 'truncated', times: Infinity });
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('network');
  });

  it('5xx on a read is retried with backoff and succeeds when the server recovers', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 500, times: 2 });
    const { c, waits } = client(emu);
    expect(await c.listTemplates()).toHaveLength(3);
    expect(waits).toEqual([500, 1000]);
    expect(emu.count('GET /v2/templates')).toBe(3);
  });

  it('5xx that persists on a read ends as unavailable (server) after bounded retries', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 503, times: Infinity, message: 'maintenance' });
    const { c } = client(emu);
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('server');
    expect(e.message).toMatch(/503: maintenance/);
    expect(emu.count('GET /v2/templates')).toBe(4);
  });

  it('a network error on a read is retried; a dead server ends as unavailable (network)', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', kind: 'reset' });
    const { c } = client(emu);
    expect(await c.listTemplates()).toHaveLength(3);
    const dead = new SkytapClient({ baseUrl: 'http://127.0.0.1:9', username: 'u', token: 't' }, { sleep: recordingSleep().sleep });
    const e = await failure(dead.listTemplates());
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('network');
    expect(e.message).toMatch(/ECONNREFUSED/);
  });

  it('writes other than create are not retried on 5xx either', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu);
    const env = await c.createEnvironment({ templateId: '500', name: 'x' });
    emu.faults.push({ match: 'PUT /configurations/*', status: 502 });
    const e = await failure(c.setRunstate(env.id, 'running'));
    expect(e.code).toBe('unavailable');
    expect(emu.count('PUT /configurations/*')).toBe(1);
  });
});

describe('skytap client: create is never sent twice', () => {
  it('not after a 500 (even when Skytap did create it)', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'POST /configurations', status: 500, afterHandling: true });
    const { c } = client(emu);
    const e = await failure(c.createEnvironment({ templateId: '500', name: 'once' }));
    expect(e.code).toBe('unavailable');
    expect(e.detail.maybeCreated).toBe(true);
    expect(e.message).toMatch(/not re-sent/);
    expect(emu.count('POST /configurations')).toBe(1);
    expect(emu.state.environments.size).toBe(1);
  });

  it('not after a timeout', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'POST /configurations', kind: 'hang' });
    const { c } = client(emu, { timeoutMs: 300 });
    const e = await failure(c.createEnvironment({ templateId: '500', name: 'once' }));
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('network');
    expect(e.detail.maybeCreated).toBe(true);
    expect(e.message).toMatch(/no complete reply within/);
    expect(emu.count('POST /configurations')).toBe(1);
  });

  it('not after a reset connection or an unreadable reply', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu);
    emu.faults.push({ match: 'POST /configurations', kind: 'reset', afterHandling: true });
    expect((await failure(c.createEnvironment({ templateId: '500', name: 'a' }))).detail.maybeCreated).toBe(true);
    emu.faults.push({ match: 'POST /configurations', kind: 'malformed' });
    expect((await failure(c.createEnvironment({ templateId: '500', name: 'b' }))).detail.maybeCreated).toBe(true);
    emu.faults.push({ match: 'POST /configurations', kind: 'truncated' });
    expect((await failure(c.createEnvironment({ templateId: '500', name: 'c' }))).detail.maybeCreated).toBe(true);
    expect(emu.count('POST /configurations')).toBe(3);
  });

  it('goes out on its own fresh connection, so a stale pooled socket cannot make its outcome unknown', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu);
    await c.listTemplates();
    await c.listTemplates();
    await c.createEnvironment({ templateId: '500', name: 'fresh' });
    await c.createEnvironment({ templateId: '500', name: 'fresh too' });
    await c.listTemplates();
    const reads = new Set(emu.requests.filter((r) => r.method === 'GET').map((r) => r.conn));
    const creates = emu.requests.filter((r) => r.method === 'POST').map((r) => r.conn);
    expect(reads.size).toBeLessThan(3); // reads reuse the pool
    expect(creates.some((port) => reads.has(port))).toBe(false);
    expect(new Set(creates).size).toBe(2);
  });

  it('a create that could not connect says it was not sent (no maybeCreated)', async () => {
    const dead = new SkytapClient({ baseUrl: 'http://127.0.0.1:9', username: 'u', token: 't' });
    const e = await failure(dead.createEnvironment({ templateId: '500', name: 'x' }));
    expect(e.code).toBe('unavailable');
    expect(e.detail.reason).toBe('network');
    expect(e.detail.maybeCreated).toBeUndefined();
    expect(e.message).toMatch(/ECONNREFUSED/);
  });

  it('refuses a blank or over-long name before sending', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu);
    expect((await failure(c.createEnvironment({ templateId: '500', name: ' ' }))).code).toBe('invalid_request');
    expect((await failure(c.createEnvironment({ templateId: '500', name: 'n'.repeat(256) }))).code).toBe('invalid_request');
    expect(emu.requests).toHaveLength(0);
  });

  it('but a 423/429 (refused, nothing created) is retried, and exactly one environment results', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'POST /configurations', status: 423, retryAfter: 2 }, { match: 'POST /configurations', status: 429 });
    const { c, waits } = client(emu);
    const env = await c.createEnvironment({ templateId: '500', name: 'after retries' });
    expect(env.runstate).toBe('busy');
    expect(waits).toEqual([2000, 7000]);
    expect(emu.count('POST /configurations')).toBe(3);
    expect(emu.state.environments.size).toBe(1);
  });
});

describe('skytap client: 423/429/422-busy retries', () => {
  it('honours Retry-After in seconds, as an HTTP date, and falls back when absent or garbage', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const date = new Date(Date.now() + 30_000).toUTCString();
    emu.faults.push(
      { match: 'GET /v2/templates', status: 423, retryAfter: 3 },
      { match: 'GET /v2/templates', status: 429, retryAfter: date },
      { match: 'GET /v2/templates', status: 423 },
      { match: 'GET /v2/templates', status: 429, retryAfter: 'soon-ish' },
    );
    const { c, waits, retries } = client(emu);
    expect(await c.listTemplates()).toHaveLength(3);
    expect(waits[0]).toBe(3000);
    expect(waits[1]).toBeGreaterThan(27_000);
    expect(waits[1]).toBeLessThanOrEqual(30_000);
    expect(waits.slice(2)).toEqual([7000, 7000]);
    expect(retries.map((r) => [r.status, r.attempt])).toEqual([
      [423, 1],
      [429, 2],
      [423, 3],
      [429, 4],
    ]);
  });

  it('parses Retry-After strictly', () => {
    expect(parseRetryAfter('0')).toBe(0);
    expect(parseRetryAfter('12')).toBe(12_000);
    expect(parseRetryAfter('-3')).toBeNull();
    expect(parseRetryAfter('1.5')).toBeNull();
    expect(parseRetryAfter('tomorrow')).toBeNull();
    expect(parseRetryAfter('2026')).toBe(2_026_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2015-10-21T07:27:50Z'))).toBe(10_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2016-01-01T00:00:00Z'))).toBe(0);
    expect(parseRetryAfter(undefined)).toBeNull();
  });

  it('when the budget is spent the error says "rate limited", not "failed"', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 429, retryAfter: 1, times: Infinity });
    const { c } = client(emu, { budget: { maxRetries: 2, fallbackWaitMs: 10, maxTotalWaitMs: 60_000 } });
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/rate limited/);
    expect(e.message).not.toMatch(/failed/i);
    expect(e.detail.retries).toBe(2);
    expect(emu.count('GET /v2/templates')).toBe(3);
  });

  it('stops before a Retry-After that would exceed the total wait budget', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 3600, times: Infinity });
    const { c, waits } = client(emu, { budget: BUDGETS.testConnection });
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/wait 3600 s/);
    expect(waits).toEqual([]);
    expect(emu.count('GET /v2/templates')).toBe(1);
  });

  it('the test-connection budget allows exactly one retry', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 1, times: Infinity });
    const { c } = client(emu, { budget: BUDGETS.testConnection });
    expect((await failure(c.listTemplatesPage(100, 0))).code).toBe('rate_limited');
    expect(emu.count('GET /v2/templates')).toBe(2);
  });

  it('retries a runstate change that meets a busy environment (422 busy) until Skytap accepts it', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 400, runstateBusyMs: 30 } });
    const rec = recordingSleep(1);
    const { c } = client(emu, { budget: { maxRetries: 50, fallbackWaitMs: 25, maxTotalWaitMs: 10_000 }, sleep: rec.sleep });
    const env = await c.createEnvironment({ templateId: '501', name: 'busy first' });
    const accepted = await c.setRunstate(env.id, 'running');
    expect(accepted.runstate).toBe('busy');
    expect(rec.waits.length).toBeGreaterThan(0);
    const puts = emu.requests.filter((r) => r.method === 'PUT');
    expect(puts.slice(0, -1).every((r) => r.status === 422)).toBe(true);
    expect(puts.at(-1)!.status).toBe(200);
  });

  it('an environment that stays busy ends as rate limited (busy) once the budget is spent', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu, { budget: { maxRetries: 3, fallbackWaitMs: 10, maxTotalWaitMs: 60_000 } });
    emu.faults.push({ match: 'POST /configurations', kind: 'stayBusy' });
    const env = await c.createEnvironment({ templateId: '500', name: 'stuck' });
    const e = await failure(c.setRunstate(env.id, 'running'));
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/resource stayed busy/);
    expect(emu.count('PUT /configurations/*')).toBe(4);
    expect((await c.getEnvironment(env.id))!.runstate).toBe('busy');
  });
});

describe('skytap client: environments, VMs, user data', () => {
  it('creates without starting, powers on, reads VMs with interfaces and hardware', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 20, runstateBusyMs: 20 } });
    const { c } = client(emu, { sleep: recordingSleep(1).sleep, budget: { maxRetries: 50, fallbackWaitMs: 20, maxTotalWaitMs: 5000 } });
    const env = await c.createEnvironment({ templateId: '500', name: 'POV acme' });
    expect(env.name).toBe('POV acme');
    await waitFor(async () => (await c.getEnvironment(env.id))!.runstate === 'stopped');
    await c.setRunstate(env.id, 'running');
    await waitFor(async () => (await c.getEnvironment(env.id))!.runstate === 'running');
    const vms = await c.listVms(env.id);
    expect(vms.map((v) => v.name)).toEqual(['control-node', 'win-jump', 'rhel-target', 'appliance']);
    expect(vms[0]!.runstate).toBe('running');
    expect(vms[0]!.interfaces[0]).toMatchObject({ network_type: 'automatic' });
    expect(vms[0]!.interfaces[0]!.ip).toMatch(/^10\.0\./);
    expect(vms[1]!.hardware.guestOS).toBe('windows2019srv-64');
  });

  it('getEnvironment answers null on 404; delete is accepted then completes when GET answers 404', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, deleteMs: 400 } });
    const { c } = client(emu);
    expect(await c.getEnvironment('424242')).toBeNull();
    const env = await c.createEnvironment({ templateId: '501', name: 'doomed' });
    expect(await c.deleteEnvironment(env.id)).toBe('deleted');
    expect((await c.getEnvironment(env.id))!.runstate).toBe('busy');
    await waitFor(async () => (await c.getEnvironment(env.id)) === null);
    expect(await c.deleteEnvironment(env.id)).toBe('already_gone');
  });

  it('user data round-trips; over 16384 characters is refused before sending; Skytap’s 422 is a validation error', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu);
    const env = await c.createEnvironment({ templateId: '500', name: 'ud' });
    const [vm] = await c.listVms(env.id);
    const payload = '#!/bin/sh\n# BEGIN-DASHBOARD-AGENT-BOOTSTRAP\necho hi\n# END-DASHBOARD-AGENT-BOOTSTRAP\n';
    await c.setVmUserData(env.id, vm!.id, payload);
    expect(await c.getVmUserData(env.id, vm!.id)).toBe(payload);
    const before = emu.requests.length;
    const e = await failure(c.setVmUserData(env.id, vm!.id, 'x'.repeat(USER_DATA_MAX + 1)));
    expect(e.code).toBe('invalid_request');
    expect(emu.requests.length).toBe(before);
    emu.faults.push({ match: 'PUT /v2/configurations/*/vms/*/user_data', status: 422, message: 'Contents is too long' });
    const e2 = await failure(c.setVmUserData(env.id, vm!.id, 'short'));
    expect(e2.code).toBe('invalid_request');
    expect(e2.message).toMatch(/Contents is too long/);
  });

  it('an AbortSignal cancels a request and a retry wait', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const ac = new AbortController();
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 60 });
    const c = new SkytapClient({ baseUrl: emu.url, username: 'demo', token: 'demo-token' }, { signal: ac.signal });
    const p = c.listTemplates();
    setTimeout(() => ac.abort(), 100);
    const e = await failure(p);
    expect(e.code).toBe('cancelled');
    const ac2 = new AbortController();
    emu.faults.push({ match: 'GET /v2/templates', kind: 'hang' });
    const c2 = new SkytapClient({ baseUrl: emu.url, username: 'demo', token: 'demo-token' }, { signal: ac2.signal });
    const p2 = c2.listTemplates();
    setTimeout(() => ac2.abort(), 100);
    expect((await failure(p2)).code).toBe('cancelled');
  });

  it('surfaces Skytap’s rate_limited flag on an environment whose power operation was queued', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, rateLimitedMs: 100_000 } });
    const { c } = client(emu);
    const env = await c.createEnvironment({ templateId: '501', name: 'queued' });
    emu.faults.push({ match: 'PUT /configurations/*', kind: 'rateLimited' });
    const after = await c.setRunstate(env.id, 'running');
    expect(after.rate_limited).toBe(true);
    expect((await c.listEnvironments())[0]!.rate_limited).toBe(true);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not reached');
}
