import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/transport';
import { IPC } from '../../shared/contract/transport';
import type { Core } from '../../main/core/create';
import { bindIpc } from '../../main/electron/ipc';
import { startHost, type Host } from '../../main/host/server';
import { hostFixture, tempHome, testCore } from './helpers';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');

/** A dispatcher spy: counts handler runs by wrapping the core's dispatcher. */
function countHandlerRuns(core: Core) {
  const counter = { runs: 0 };
  const d = core.dispatcher as unknown as { handlers: Record<string, (...a: unknown[]) => unknown> };
  for (const [k, fn] of Object.entries(d.handlers)) {
    d.handlers[k] = (...a: unknown[]) => {
      counter.runs++;
      return fn(...a);
    };
  }
  return counter;
}

const MALFORMED: [string, string, unknown][] = [
  ['wrong type', 'jobs.get', { id: 7 }],
  ['extra field', 'settings.get', { verbose: true }],
  ['unknown method', 'settings.burn', {}],
];

describe('malformed calls are refused with invalid_request on every transport', () => {
  let core: Core;
  let host: Host;
  let counter: { runs: number };
  beforeAll(async () => {
    core = await testCore();
    counter = countHandlerRuns(core);
    host = await startHost({ core, staticDir: tempHome() });
  });
  afterAll(async () => {
    await host.close();
    await core.close();
  });

  it('IPC adapter', async () => {
    const ipc = new EventEmitter() as EventEmitter & { handle: (c: string, fn: (...a: unknown[]) => unknown) => void };
    const handlers = new Map<string, (...a: unknown[]) => unknown>();
    ipc.handle = (c, fn) => handlers.set(c, fn);
    let trusted = true;
    bindIpc({ ipcMain: ipc as never, core, isTrustedSender: () => trusted });
    const invoke = handlers.get(IPC.call)!;
    for (const [, method, args] of MALFORMED) {
      const reply = (await invoke({}, { t: 'call', id: 1, method, args })) as { error?: { code: string } };
      expect(reply.error?.code).toBe('invalid_request');
    }
    expect(counter.runs).toBe(0);
    const good = (await invoke({}, { t: 'call', id: 2, method: 'jobs.list', args: {} })) as { result?: unknown };
    expect(good.result).toEqual({ jobs: [] });
    trusted = false;
    const refused = (await invoke({}, { t: 'call', id: 3, method: 'jobs.list', args: {} })) as { error?: { code: string } };
    expect(refused.error?.code).toBe('forbidden');
    counter.runs = 0;
  });

  it('WebSocket', async () => {
    const ws = new WebSocket(host.url.replace('http', 'ws') + 'ws', [WS_PROTOCOL, WS_TOKEN_PREFIX + host.token]);
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const replies: { id: number; t: string; error?: { code: string } }[] = [];
    ws.on('message', (m) => {
      const msg = JSON.parse(String(m)) as { id: number; t: string; error?: { code: string } };
      if (msg.t !== 'hello') replies.push(msg);
    });
    MALFORMED.forEach(([, method, args], i) => ws.send(JSON.stringify({ t: 'call', id: i + 1, method, args })));
    ws.send(JSON.stringify({ t: 'call', id: 9, method: 'jobs.list', args: {}, sneaky: 1 }));
    await expect.poll(() => replies.length).toBe(4);
    for (const r of replies) {
      expect(r.t).toBe('error');
      expect(r.error?.code).toBe('invalid_request');
    }
    expect(counter.runs).toBe(0);
    ws.close();
  });

  it('CLI', async () => {
    for (const [, method, args] of MALFORMED) {
      const err = await run(process.execPath, [join(ROOT, 'bin/povdesk.mjs'), 'call', method, JSON.stringify(args)], {
        env: { ...process.env, POVDESK_HOME: tempHome(), POVDESK_FROM_SOURCE: '1' },
      }).then(
        () => null,
        (e: { code: number; stderr: string }) => e,
      );
      expect(err?.code).toBe(1);
      expect(JSON.parse(err!.stderr.trim().split('\n').pop()!)).toMatchObject({ error: { code: 'invalid_request' } });
    }
  }, 60_000);
});

describe('the socket refuses strangers', () => {
  const f = hostFixture();

  const attempt = (protocols: string[], headers: Record<string, string> = {}) =>
    new Promise<number | 'open'>((resolve) => {
      const ws = new WebSocket(f.host.url.replace('http', 'ws') + 'ws', protocols, { headers });
      ws.once('open', () => {
        ws.close();
        resolve('open');
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('error', () => resolve(0));
    });

  it('without the token', async () => {
    expect(await attempt([WS_PROTOCOL])).toBe(401);
    expect(await attempt([WS_PROTOCOL, WS_TOKEN_PREFIX + 'guess'])).toBe(401);
  });
  it('with a foreign Origin, even holding the token', async () => {
    expect(await attempt([WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token], { Origin: 'http://evil.example' })).toBe(403);
    expect(await attempt([WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token], { Origin: `http://127.0.0.1:${f.host.port + 1}` })).toBe(403);
  });
  it('lets the app in: token and its own origin', async () => {
    expect(await attempt([WS_PROTOCOL, WS_TOKEN_PREFIX + f.host.token], { Origin: `http://127.0.0.1:${f.host.port}` })).toBe('open');
  });
});
