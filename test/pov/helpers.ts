import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import core from '../../main/services/store/migrations/001-core';
import povMigration from '../../main/services/store/migrations/002-pov';
import povLocal from '../../main/services/store/migrations/011-pov-local';
import vmNetworks from '../../main/services/store/migrations/012-vm-networks';
import povEnvName from '../../main/services/store/migrations/014-pov-env-name';
import { openDatabase, type Db } from '../../main/services/store/db';
import { JobRunner } from '../../main/services/jobs/runner';
import { SkytapClient, type RetryBudget } from '../../main/services/skytap/client';
import { PovService } from '../../main/services/pov/service';
import type { LifecycleDeps, StepContext } from '../../main/services/pov/types';
import { StreamHub } from '../../main/core/streams';
import type { CoreTuning } from '../../main/core/create';
import type { SecretStore } from '../../main/services/secrets/store';
import { testCore, type TestCore } from '../support/core';
import { startEmulator, type Emulator, type EmulatorOptions } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import type { Subscriber } from '../../main/core/streams';
import type { PovView } from '../../shared/contract/pov';

/** The POV tables, local POVs' columns (11), the VM columns a VM read writes (12) and the env_name column (14). */
export const MIGRATIONS = [core, povMigration, povLocal, vmNetworks, povEnvName];
/** Fast but real: the emulator's busy phases last tens of milliseconds. */
export const FAST_TIMING = { createBusyMs: 60, runstateBusyMs: 60, deleteMs: 60, rateLimitedMs: 200 };
export const TEST_BUDGET: RetryBudget = { maxRetries: 5, fallbackWaitMs: 20, maxTotalWaitMs: 3000 };
/** Retry-After is honoured, but scaled down so a test does not sit out whole seconds. */
export const quickSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    setTimeout(resolve, Math.min(ms, 40));
  });

export interface World {
  dir: string;
  file: string;
  db: Db;
  emu: Emulator;
  deps: LifecycleDeps;
  /** The hub the world's jobs and POV service announce on (`job.changed`, `pov.changed`). */
  hub: StreamHub;
  jobs: JobRunner;
  svc: PovService;
  logs: string[];
  ctx: StepContext;
  close(): Promise<void>;
}

export function clientFor(url: string, signal?: AbortSignal): SkytapClient {
  return new SkytapClient(
    { baseUrl: url, username: 'demo', token: 'demo-token' },
    { budget: TEST_BUDGET, sleep: quickSleep, timeoutMs: 5000, ...(signal ? { signal } : {}) },
  );
}

/**
 * The POVs' collaborators where no control node, PAM or auto-delete is set up (the app wires the
 * real ones in main/core/create.ts): the install says "not set up", the teardowns and the schedule
 * do nothing, and a POV keeps the auto-delete time asked for (none by default).
 */
export function bareCollaborators(): Pick<LifecycleDeps, 'controlNode' | 'pam' | 'autoDelete'> {
  return {
    controlNode: { installAfterPowerOn: async () => 'not_set_up', teardown: async () => {} },
    pam: { teardown: async () => {} },
    autoDelete: {
      at: (asked) => asked,
      arm: async () => {},
      move: async () => {},
      sweep: async () => {},
      ladderView: () => ({ nextWarning: null, lastWarning: null }),
    },
  };
}

export async function world(opts: EmulatorOptions & { seed?: EmulatorOptions['seed'] } = {}): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-pov-'));
  const file = join(dir, 'povdesk.db');
  const db = openDatabase(file, MIGRATIONS);
  const emu = await startEmulator({ timing: FAST_TIMING, seed: SEEDS.demo, ...opts });
  const logs: string[] = [];
  const deps: LifecycleDeps = {
    db,
    skytap: async (signal) => clientFor(emu.url, signal),
    pollMs: 15,
    waitTimeoutMs: 5000,
    ...bareCollaborators(),
  };
  const hub = new StreamHub();
  const jobs = new JobRunner(db, { hub });
  const svc = new PovService({ ...deps, jobs, hub });
  const ctx: StepContext = {
    signal: new AbortController().signal,
    progress: () => {},
    log: (m, level = 'info') => logs.push(`${level}: ${m}`),
  };
  return {
    dir,
    file,
    db,
    emu,
    deps,
    hub,
    jobs,
    svc,
    logs,
    ctx,
    async close() {
      await jobs.shutdown();
      await emu.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function firstTemplateId(w: World): string {
  return [...w.emu.state.templates.keys()][0]!;
}

/** Creates a POV through the service and waits for its job. */
export async function createPov(w: World, name = 'Acme POV', templateId = firstTemplateId(w)) {
  const { jobId, povId } = w.svc.create({ templateId, name });
  const job = await w.jobs.wait(jobId);
  return { jobId, povId, job };
}

/**
 * The real core (createCore over a temp home, every migration, an in-memory keychain) in front of
 * the Skytap emulator, with the emulator's URL and credentials saved in Settings unless `noSkytap`.
 */
export interface CoreWorld extends TestCore {
  dir: string;
  emu: Emulator;
}

export async function coreWorld(
  opts: EmulatorOptions & { env?: Record<string, string>; tuning?: CoreTuning; noSkytap?: boolean; secrets?: SecretStore } = {},
): Promise<CoreWorld> {
  const { env, tuning, noSkytap, secrets, ...emuOpts } = opts;
  const emu = await startEmulator({ timing: FAST_TIMING, seed: SEEDS.demo, ...emuOpts });
  const t = await testCore({ env: env ?? {}, ...(tuning ? { tuning } : {}), ...(secrets ? { secrets } : {}) });
  if (!noSkytap) await t.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
  return Object.assign(Object.create(t) as TestCore, {
    dir: t.home,
    emu,
    async close() {
      await t.close();
      await emu.close();
    },
  });
}

/** Runs test/pov/crash-child.ts (a lifecycle job that SIGKILLs itself at CRASH_AT) and collects how it ended. */
export function runCrashChild(
  env: Record<string, string>,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', join(process.cwd(), 'test', 'pov', 'crash-child.ts')], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

/** Every `pov.updated` event the hub sends from now on, in order: what the POV list follows. */
export function followPovUpdates(hub: StreamHub): PovView[] {
  const seen: PovView[] = [];
  const sub: Subscriber = { unacked: new Map(), send: (_s, _k, data) => void seen.push(data as PovView) };
  hub.subscribe('pov.updated', '*', sub);
  return seen;
}
