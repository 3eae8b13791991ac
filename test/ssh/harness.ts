import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { HostKeyPrompt, SshStatus } from '../../shared/contract/ssh';
import { StreamHub, type Subscriber } from '../../main/core/streams';
import { SessionManager, type ManagerDeps } from '../../main/services/ssh/manager';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { openDatabase, type Db } from '../../main/services/store/db';
import ssh from '../../main/services/store/migrations/004-ssh';
import sshAgent from '../../main/services/store/migrations/010-ssh-agent';
import { rssKb, sshLogin } from './sshd';

/** Polls fn until it answers; `what` (or what it returns, read at the timeout) names the wait. */
export async function waitFor<T>(what: string | (() => string), fn: () => T | undefined | null | false, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A consumer like the renderer: subscribes to a session's ssh.data, keeps the text (tail) and a
 * byte count, and acknowledges each event after `ackDelayMs` per 64 KB it carries (the time a
 * terminal takes to parse and render), one event at a time.
 */
export class Consumer implements Subscriber {
  unacked = new Map<string, number>();
  bytes = 0;
  text = '';
  maxPressure = 0;
  events = 0;
  private queue: Promise<void> = Promise.resolve();
  private unsub: () => void;
  constructor(
    private readonly hub: StreamHub,
    readonly sessionId: string,
    private readonly ackDelayMs = 0,
    private readonly keepText = 256 * 1024,
  ) {
    this.unsub = hub.subscribe('ssh.data', sessionId, this);
  }
  send(stream: string, key: string, data: unknown) {
    if (stream !== 'ssh.data' || key !== this.sessionId) return;
    const d = data as { data: Uint8Array; bytes: number };
    const buf = Buffer.from(d.data.buffer, d.data.byteOffset, d.data.byteLength);
    if (buf.length !== d.bytes) throw new Error(`event says ${d.bytes} bytes but carries ${buf.length}`);
    this.events++;
    this.bytes += buf.length;
    // Only the tail can survive the slice: decoding all of a 256 KB event would be test garbage.
    this.text = (this.text + buf.subarray(Math.max(0, buf.length - this.keepText)).toString('latin1')).slice(-this.keepText);
    this.maxPressure = Math.max(this.maxPressure, this.hub.pressure('ssh.data', this.sessionId));
    const ack = () => this.hub.ack(this, 'ssh.data', this.sessionId, d.bytes);
    if (this.ackDelayMs > 0) {
      // One event at a time, like a terminal rendering: each takes ackDelayMs after the previous.
      const held = d.data;
      this.queue = this.queue.then(
        () => new Promise<void>((r) => setTimeout(() => (void held.length, ack(), r()), Math.max(1, (this.ackDelayMs * d.bytes) / 65536))),
      );
    } else queueMicrotask(ack);
  }
  close() {
    this.unsub();
  }
}

/** Collects every event of a stream (key '*'). */
export class Recorder<T> implements Subscriber {
  unacked = new Map<string, number>();
  items: T[] = [];
  constructor(hub: StreamHub, stream: string) {
    hub.subscribe(stream, '*', this);
  }
  send(_s: string, _k: string, data: unknown) {
    this.items.push(structuredClone(data) as T);
  }
}

export interface Env {
  dir: string;
  db: Db;
  hub: StreamHub;
  secrets: MemorySecretStore;
  manager: SessionManager;
  statuses: Recorder<SshStatus>;
  prompts: Recorder<HostKeyPrompt>;
  dispose(): void;
}

export function makeEnv(opts: Partial<ManagerDeps> = {}): Env {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-ssh-'));
  const db = openDatabase(join(dir, 'povdesk.db'), [ssh, sshAgent]);
  const hub = new StreamHub();
  const secrets = new MemorySecretStore({ backend: 'memory', available: true, message: 'test', remedy: null });
  const statuses = new Recorder<SshStatus>(hub, 'ssh.status');
  const prompts = new Recorder<HostKeyPrompt>(hub, 'ssh.hostKeyPrompt');
  const manager = new SessionManager({ db, secrets, hub, session: { backoffMs: () => 300, maxAttempts: 30 }, ...opts });
  return {
    dir,
    db,
    hub,
    secrets,
    manager,
    statuses,
    prompts,
    dispose() {
      manager.closeAll();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function lastStatus(env: Env, id: string): SshStatus | undefined {
  return env.statuses.items.filter((s) => s.sessionId === id).at(-1);
}

export async function waitState(env: Env, id: string, state: SshStatus['state'], ms = 15_000): Promise<SshStatus> {
  return waitFor(
    `session ${id} to be ${state} (last: ${JSON.stringify(lastStatus(env, id))})`,
    () => {
      const s = lastStatus(env, id);
      return s && s.state === state ? s : undefined;
    },
    ms,
  );
}

/**
 * Waits for the session's pending host-key prompt. Fails at once if the session closes first, and
 * on either failure says what the session last reported plus `context()` (e.g. the sshd log tail),
 * so a failure on a CI machine explains itself.
 */
export async function nextPrompt(env: Env, sessionId: string, ms = 15_000, context: () => string = () => ''): Promise<HostKeyPrompt> {
  const explain = () => {
    const extra = context();
    return (
      `a host-key prompt for ${sessionId} (session's last ` +
      `status: ${JSON.stringify(lastStatus(env, sessionId) ?? null)})${extra ? '\n' + extra : ''}`
    );
  };
  const until = Date.now() + ms;
  for (;;) {
    const p = env.prompts.items.find(
      (q) => q.sessionId === sessionId && q.state === 'pending' && env.manager.pendingPrompts().some((x) => x.promptId === q.promptId),
    );
    if (p) return p;
    if (lastStatus(env, sessionId)?.state === 'closed') throw new Error(`the session closed before ${explain()}`);
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${explain()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Runs a command in an open session and waits for a marker it prints. */
export async function run(env: Env, c: Consumer, command: string, marker: RegExp, ms = 10_000): Promise<RegExpExecArray> {
  const from = c.text.length;
  env.manager.input(c.sessionId, command + '\n');
  return waitFor(
    `output matching ${marker} after ${JSON.stringify(command)}; got ${JSON.stringify(c.text.slice(-300))}`,
    () => marker.exec(c.text.slice(Math.max(0, from - 10))),
    ms,
  );
}

/**
 * A shell prompt at the end of the output, and whatever control sequences follow it: busybox sh
 * asks the terminal for the cursor position after it (ESC[6n), and redraws it as `\r~ # ESC[J` when
 * the window size arrives after the first prompt (a CI run timed out on that output).
 */
export const PROMPT = /[#$] (\x1b\[[0-9;?]*[A-Za-z])*$/;

/** The terminal size openShell asks for. */
export const SHELL_SIZE = { cols: 120, rows: 40 };

/**
 * Opens a shell on a loopback sshd as the test login (sshLogin; a guest's: `username`) with
 * `privateKey`, accepts the host key, and waits for the shell's prompt. The consumer acks after
 * `ackDelayMs` per 64 KB (see Consumer).
 */
export async function openShell(
  env: Env,
  port: number,
  privateKey: string,
  opts: { ackDelayMs?: number; keepText?: number; context?: () => string; username?: string } = {},
): Promise<Consumer> {
  const id = await env.manager.open({
    target: {
      host: '127.0.0.1',
      port,
      username: opts.username ?? sshLogin(),
      auth: { kind: 'privateKey', privateKey },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
    },
    ...SHELL_SIZE,
  });
  const c = new Consumer(env.hub, id, opts.ackDelayMs ?? 0, opts.keepText ?? 256 * 1024);
  env.manager.answerHostKey((await nextPrompt(env, id, 15_000, opts.context)).promptId, true);
  await waitState(env, id, 'open');
  await waitFor(
    () => `the prompt; the session printed ${JSON.stringify(c.text.slice(-300))}`,
    () => PROMPT.test(c.text),
  );
  return c;
}

/** Peak RSS of this process while `work` runs, against its value at the start (MB). */
export function peakRssGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  global.gc?.();
  return peakGrowth(() => rssKb() * 1024, 20, work);
}

/**
 * Peak live memory (V8 heap in use plus buffers outside it) while `work` runs, against its value at
 * the start (MB), read after a full collection every 250 ms: what the process holds, not the
 * garbage a loaded machine has not collected yet (peak RSS counts that, and varied 67–92 MB for
 * the same 100 MB stream with the load).
 */
export function peakLiveGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  const gc = collector();
  return peakGrowth(
    () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    },
    250,
    work,
  );
}

async function peakGrowth<T>(read: () => number, everyMs: number, work: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  const base = read();
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, read())), everyMs);
  try {
    const result = await work();
    peak = Math.max(peak, read());
    return { result, growthMb: (peak - base) / 1048576 };
  } finally {
    clearInterval(sampler);
  }
}

/** V8's full collection, exposed at run time (vitest's workers do not start with --expose-gc). */
function collector(): () => void {
  if (typeof global.gc === 'function') return global.gc;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
