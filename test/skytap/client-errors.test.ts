import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract/errors';
import { SkytapClient } from '../../main/services/skytap/client';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, failure, recordingSleep } from './helpers';

/* How the Skytap client fails: each HTTP and network failure as an AppError, and a create never sent twice. */

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
