import { describe, expect, it } from 'vitest';
import { SkytapClient, parseContentRange } from '../../main/services/skytap/client';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, failure } from './helpers';

/* The Skytap client's requests: authentication, keep_idle, ids, count/offset paging, project scope. */

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
