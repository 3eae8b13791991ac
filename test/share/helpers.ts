import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { methods, type MethodName } from '../../shared/contract';
import type { Base } from '../../main/core/base';
import { allHandlers } from '../../main/core/handlers';
import { shareWorldFor, type ShareWorld } from '../../main/core/handlers/share';
import { StreamHub } from '../../main/core/streams';
import { JobRunner } from '../../main/services/jobs/runner';
import { createLogger, type Logger } from '../../main/services/log/logger';
import { MemorySecretStore, type SecretStore } from '../../main/services/secrets/store';
import { SettingsService } from '../../main/services/settings/settings';
import { openDatabase, type Db } from '../../main/services/store/db';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { FAST_TIMING } from '../pov/helpers';

/**
 * A world for share links and auto-delete: real SQLite with every migration, a real log file,
 * the Skytap emulator over HTTP, the handlers as the dispatcher binds them, and ONE controllable
 * clock that both the app's services and the emulator read (real time plus an offset, so the
 * emulator's busy phases still pass while a test jumps days ahead).
 */
export interface ShareTestWorld {
  dir: string;
  file: string;
  emu: Emulator;
  clock: { offsetMs: number; now(): Date; advance(ms: number): void };
  base: Base;
  db: Db;
  log: Logger;
  share: ShareWorld;
  call<M extends MethodName>(method: M, args: z.input<(typeof methods)[M]['args']>): Promise<z.output<(typeof methods)[M]['result']>>;
  /** Closes the database and builds a new Base over the same file (an app restart). */
  restart(): void;
  close(): Promise<void>;
}

export const HOUR = 3600_000;
export const DAY = 24 * HOUR;

export async function shareWorld(opts: { secrets?: SecretStore } = {}): Promise<ShareTestWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-share-'));
  const file = join(dir, 'povdesk.db');
  const clock = {
    offsetMs: 0,
    now: () => new Date(Date.now() + clock.offsetMs),
    advance: (ms: number) => {
      clock.offsetMs += ms;
    },
  };
  const emu = await startEmulator({ timing: FAST_TIMING, seed: SEEDS.demo, now: () => Date.now() + clock.offsetMs });
  const secrets = opts.secrets ?? new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null });
  let handlers: ReturnType<typeof allHandlers>;
  const env = { POVDESK_SKYTAP_POLL_MS: '20' };
  const build = (): { base: Base; db: Db; log: Logger; share: ShareWorld } => {
    const db = openDatabase(file);
    const log = createLogger({ dir, name: 'share-test' });
    const settings = new SettingsService(db, secrets, env, log);
    const base: Base = {
      home: dir,
      env,
      role: 'test',
      db,
      secrets,
      jobs: new JobRunner(db),
      hub: new StreamHub(),
      log,
      settings,
      paths: { home: dir, database: file, logs: dir },
      onClose: () => {},
    };
    const share = shareWorldFor(base, { now: clock.now });
    handlers = allHandlers(base);
    return { base, db, log, share };
  };
  let cur = build();
  await cur.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
  const w: ShareTestWorld = {
    dir,
    file,
    emu,
    clock,
    get base() {
      return cur.base;
    },
    get db() {
      return cur.db;
    },
    get log() {
      return cur.log;
    },
    get share() {
      return cur.share;
    },
    async call(method, args) {
      const def = methods[method];
      const parsed = def.args.parse(args);
      const h = (handlers as Record<string, (a: unknown, c: unknown) => Promise<unknown>>)[method]!;
      return def.result.parse(await h(parsed, { transport: 'test' })) as never;
    },
    restart() {
      cur.db.close();
      cur = build();
    },
    async close() {
      await cur.base.jobs.shutdown();
      await emu.close();
      cur.db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return w;
}

/** Creates a POV through pov.create and waits for its job to succeed. */
export async function createPov(w: ShareTestWorld, autoDeleteAt?: Date, name = 'Acme POV'): Promise<string> {
  const templateId = [...w.emu.state.templates.keys()][0]!;
  const { jobId } = await w.call('pov.create', { templateId, name, ...(autoDeleteAt ? { autoDeleteAt: autoDeleteAt.toISOString() } : {}) });
  const job = await w.base.jobs.wait(jobId);
  if (job.state !== 'succeeded') throw new Error(`pov.create failed: ${JSON.stringify(job.error)}`);
  return job.subject!;
}

/** A request straight to the emulator, as another Skytap client (the web UI, a script) would send it. */
export function skytapRequest(w: ShareTestWorld, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
  return fetch(`${w.emu.url}${path}`, {
    method,
    headers: {
      authorization: 'Basic ' + Buffer.from('demo:demo-token').toString('base64'),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** POSTs a sharing portal for the first VM of the world's only environment, outside the app. */
export function postPortal(w: ShareTestWorld, access: string, name = 'made in Skytap'): Promise<Response> {
  const envId = w.emu.state.environmentIds()[0]!;
  const vm = w.emu.state.environments.get(envId)!.vms[0]!;
  return skytapRequest(w, 'POST', `/v2/configurations/${envId}/publish_sets.json`, { name, vms: [{ vm_ref: `${w.emu.url}/vms/${vm.id}`, access }] });
}
