import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BUSY_MESSAGE, SEEDS } from '../skytap-emulator';
import { matches } from '../skytap-emulator/faults';
import { emulator } from './helpers';

const AUTH = 'Basic ' + Buffer.from('demo:demo-token').toString('base64');

async function call(url: string, method = 'GET', body?: unknown, auth = AUTH) {
  const res = await fetch(url, {
    method,
    headers: { authorization: auth, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('skytap emulator', () => {
  it('answers 401 without the right Basic credentials and records every request', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    expect((await call(`${emu.url}/v2/templates`, 'GET', undefined, 'Basic ' + btoa('demo:wrong'))).status).toBe(401);
    expect((await call(`${emu.url}/v2/templates`, 'GET', undefined, '')).status).toBe(401);
    expect(emu.requests.map((r) => [r.status, r.auth?.token ?? null])).toEqual([
      [401, 'wrong'],
      [401, null],
    ]);
  });

  it('paginates collections with Content-Range items first-last/total', async () => {
    const emu = await emulator({ seed: (s) => SEEDS.many(s, 230) });
    const first = await call(`${emu.url}/v2/configurations`);
    expect(first.body).toHaveLength(100);
    expect(first.headers.get('content-range')).toBe('items 0-99/230');
    const last = await call(`${emu.url}/v2/configurations?count=100&offset=200`);
    expect(last.body).toHaveLength(30);
    expect(last.headers.get('content-range')).toBe('items 200-229/230');
    const past = await call(`${emu.url}/v2/configurations?count=100&offset=300`);
    expect(past.body).toEqual([]);
    expect(past.headers.get('content-range')).toBe('items */230');
    expect((await call(`${emu.url}/v2/configurations?count=-1`)).status).toBe(422);
  });

  it('create: busy for a while, then stopped — it does not start the VMs', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 300 } });
    const created = await call(`${emu.url}/configurations.json`, 'POST', { template_id: '500', name: 'p' });
    expect(created.status).toBe(200);
    expect(created.body.runstate).toBe('busy');
    expect(created.body.vms.map((v: { runstate: string }) => v.runstate)).toEqual(['busy', 'busy', 'busy', 'busy']);
    const put = await call(`${emu.url}/configurations/${created.body.id}.json`, 'PUT', { runstate: 'running' });
    expect(put).toMatchObject({ status: 422, body: { errors: [BUSY_MESSAGE] } });
    await new Promise((r) => setTimeout(r, 350));
    const env = await call(`${emu.url}/v2/configurations/${created.body.id}`);
    expect(env.body.runstate).toBe('stopped');
    expect(env.body.vms.every((v: { runstate: string }) => v.runstate === 'stopped')).toBe(true);
  });

  it('refuses bad creates: unknown template 404, missing template 422, long name 422, busy template 423', async () => {
    const emu = await emulator({ seed: (s) => s.addTemplate({ id: '1', name: 'b', busy: true }) });
    expect((await call(`${emu.url}/configurations`, 'POST', { template_id: '9' })).status).toBe(404);
    expect((await call(`${emu.url}/configurations`, 'POST', { name: 'x' })).status).toBe(422);
    emu.state.templates.get('1')!.busy = false;
    expect((await call(`${emu.url}/configurations`, 'POST', { template_id: '1', name: 'x'.repeat(256) })).status).toBe(422);
    emu.state.templates.get('1')!.busy = true;
    const busy = await call(`${emu.url}/configurations`, 'POST', { template_id: '1' });
    expect(busy.status).toBe(423);
    expect(busy.headers.get('retry-after')).toBe('1');
  });

  it('runstate: busy then target; halted ends stopped; invalid runstate 422', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, runstateBusyMs: 40 } });
    const { body: env } = await call(`${emu.url}/configurations`, 'POST', { template_id: '501' });
    expect((await call(`${emu.url}/configurations/${env.id}`, 'PUT', { runstate: 'exploded' })).status).toBe(422);
    expect((await call(`${emu.url}/configurations/${env.id}`, 'PUT', { runstate: 'running' })).body.runstate).toBe('busy');
    await new Promise((r) => setTimeout(r, 60));
    expect((await call(`${emu.url}/v2/configurations/${env.id}`)).body.runstate).toBe('running');
    await call(`${emu.url}/configurations/${env.id}`, 'PUT', { runstate: 'halted' });
    await new Promise((r) => setTimeout(r, 60));
    expect((await call(`${emu.url}/v2/configurations/${env.id}`)).body.runstate).toBe('stopped');
  });

  it('delete is asynchronous: GET answers busy, then 404; a busy environment answers 423', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 300, deleteMs: 300 } });
    const { body: env } = await call(`${emu.url}/configurations`, 'POST', { template_id: '501' });
    expect((await call(`${emu.url}/configurations/${env.id}`, 'DELETE')).status).toBe(423);
    await new Promise((r) => setTimeout(r, 350));
    expect((await call(`${emu.url}/configurations/${env.id}`, 'DELETE')).status).toBe(200);
    expect((await call(`${emu.url}/v2/configurations/${env.id}`)).body.runstate).toBe('busy');
    await new Promise((r) => setTimeout(r, 350));
    expect((await call(`${emu.url}/v2/configurations/${env.id}`)).status).toBe(404);
    expect((await call(`${emu.url}/configurations/${env.id}`, 'DELETE')).status).toBe(404);
  });

  it('user_data: round-trips {contents}; over 16384 characters answers 422 "Contents is too long"', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { body: env } = await call(`${emu.url}/configurations`, 'POST', { template_id: '500' });
    const vm = env.vms[0].id;
    const path = `${emu.url}/v2/configurations/${env.id}/vms/${vm}/user_data.json`;
    expect((await call(path)).body).toEqual({ contents: '' });
    expect((await call(path, 'PUT', { contents: 'x'.repeat(16384) })).status).toBe(200);
    const long = await call(path, 'PUT', { contents: 'x'.repeat(16385) });
    expect(long.status).toBe(422);
    expect(long.body.errors[0]).toMatch(/Contents is too long/);
    expect((await call(path)).body.contents).toHaveLength(16384);
  });

  it('project listings: 404 for an unknown project, only members otherwise', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    expect((await call(`${emu.url}/v2/projects/5/templates`)).status).toBe(404);
    const t = await call(`${emu.url}/v2/projects/77/templates`);
    expect(t.body.map((x: { id: string }) => x.id)).toEqual(['500']);
  });

  it('fault matching: method, .json-insensitive, * and ** segments', () => {
    expect(matches('POST /configurations', 'POST', '/configurations.json')).toBe(true);
    expect(matches('POST /configurations', 'GET', '/configurations')).toBe(false);
    expect(matches('GET /v2/configurations', 'GET', '/v2/configurations/12')).toBe(false);
    expect(matches('GET /v2/configurations/*', 'GET', '/v2/configurations/12')).toBe(true);
    expect(matches('* /v2/configurations/**', 'PUT', '/v2/configurations/12/vms/3/user_data.json')).toBe(true);
    expect(matches(/vms/, 'GET', '/v2/configurations/1/vms')).toBe(true);
  });

  it('a slow reply waits, then answers normally; faults are consumed in order', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', delayMs: 120 }, { match: 'GET /v2/templates', status: 500 });
    const t0 = Date.now();
    expect((await call(`${emu.url}/v2/templates`)).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(110);
    expect((await call(`${emu.url}/v2/templates`)).status).toBe(500);
    expect((await call(`${emu.url}/v2/templates`)).status).toBe(200);
    expect(emu.faults.remaining()).toEqual([]);
  });

  it('runs standalone with admin endpoints for faults and the request log', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/skytap-emulator/serve.ts', '--port', '0', '--seed', 'demo'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listening (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`serve.ts exited ${code}`)));
        setTimeout(() => reject(new Error('serve.ts did not start')), 20_000);
      });
      await fetch(`${url}/__emulator/faults`, {
        method: 'POST',
        body: JSON.stringify({ match: 'GET /v2/templates', status: 429, retryAfter: 2 }),
      });
      const r = await call(`${url}/v2/templates`);
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('2');
      expect((await call(`${url}/v2/templates`)).body).toHaveLength(3);
      const log = (await (await fetch(`${url}/__emulator/requests`)).json()) as Array<{ status: number }>;
      expect(log.map((x) => x.status)).toEqual([429, 200]);
      const state = (await (await fetch(`${url}/__emulator/state`)).json()) as { templates: unknown[] };
      expect(state.templates).toHaveLength(3);
      const bad = await fetch(`${url}/__emulator/faults`, { method: 'POST', body: JSON.stringify({ match: 'GET /x', status: 99 }) });
      expect(bad.status).toBe(400);
      await fetch(`${url}/__emulator/faults`, {
        method: 'POST',
        body: JSON.stringify({ match: 'GET /v2/templates', status: 500, times: 'Infinity' }),
      });
      for (let i = 0; i < 3; i++) expect((await call(`${url}/v2/templates`)).status).toBe(500);
      const reset = await fetch(`${url}/__emulator/reset`, { method: 'POST', body: JSON.stringify({ seed: 'empty' }) });
      expect(await reset.json()).toEqual({ templates: 0, environments: 0 });
      const after = await call(`${url}/v2/templates`);
      expect(after.status).toBe(200);
      expect(after.body).toEqual([]);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
