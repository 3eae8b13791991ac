import { mkdirSync } from 'node:fs';
import { openSecretStore } from '../services/secrets/keytar';
import { registeringSecrets, type SecretStore } from '../services/secrets/store';
import { CONTROL_PLANE_ENV, CONTROL_PLANE_TOKEN_ACCOUNT } from '../services/control-node/config';
import { REMOTE_TOKEN_ACCOUNT } from '../services/vm/service';
import { createLogger } from '../services/log/logger';
import { JobRunner } from '../services/jobs/runner';
import { SettingsService, SKYTAP_ENV, TOKEN_ACCOUNT as SKYTAP_TOKEN_ACCOUNT } from '../services/settings/settings';
import { openDatabase } from '../services/store/db';
import type { Base } from './base';
import { Dispatcher } from './dispatch';
import { allHandlers } from './handlers';
import { startOwnerMcp } from '../mcp/http';
import { startOwnerEndpoint } from './owner-endpoint';
import { ownerBusyError, ownerFiles, tryAcquireOwnerLock, type OwnerKind, type OwnerLock } from './owner';
import { defaultHome, pathsFor } from './paths';
import { StreamHub } from './streams';

export interface Core {
  base: Base;
  dispatcher: Dispatcher;
  /** The data directory's owner lock this core holds (see owner.ts). */
  owner: OwnerLock;
  close(): Promise<void>;
}

export interface CoreOptions {
  env?: NodeJS.ProcessEnv;
  home?: string;
  role?: Base['role'];
  /** Log file name under <home>/logs (one per process kind). */
  logName?: string;
  secrets?: SecretStore;
  /** How owner.json names this process (default: the role). */
  ownerKind?: OwnerKind;
  /** Electron only: better-sqlite3's addon file and the keytar package built for its ABI. */
  native?: { sqliteBinding: string; keytarModule: string };
}

/**
 * Builds every service once: database, keychain, jobs, streams, settings, and the handlers.
 * First it takes the data directory's owner lock, and fails with `conflict` (naming the holder)
 * when another live process has it: only the owner may mark rows interrupted, run jobs and resume.
 */
export async function createCore(opts: CoreOptions = {}): Promise<Core> {
  const env = opts.env ?? process.env;
  const home = opts.home ?? defaultHome(env);
  const paths = pathsFor(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const owner = tryAcquireOwnerLock(home, opts.ownerKind ?? opts.role ?? 'app');
  if (!owner) throw ownerBusyError(home);
  try {
    return await buildCore(opts, env, home, paths, owner);
  } catch (err) {
    owner.release();
    throw err;
  }
}

async function buildCore(
  opts: CoreOptions,
  env: NodeJS.ProcessEnv,
  home: string,
  paths: ReturnType<typeof pathsFor>,
  owner: OwnerLock,
): Promise<Core> {
  const log = createLogger({ dir: paths.logs, name: opts.logName ?? 'core' });
  // Cold start: the keyring probe (three D-Bus round trips, ~16 ms warm and ~180 ms on a keyring's
  // first use) is started before the database opens, so its first round trip overlaps the migrations.
  const secretsProbe = opts.secrets ? null : openSecretStore({ keytarModule: opts.native?.keytarModule });
  const db = openDatabase(paths.database, undefined, opts.native?.sqliteBinding);
  // Every secret the app holds is known to the logger from the start, so it is redacted wherever it
  // is logged, whichever domain logs it; job records and diagnostics go through the same scrub.
  const secrets = registeringSecrets(opts.secrets ?? (await secretsProbe!), log);
  for (const name of [SKYTAP_ENV.token, CONTROL_PLANE_ENV.token]) if (env[name]) log.addSecret(env[name]);
  for (const account of [SKYTAP_TOKEN_ACCOUNT, CONTROL_PLANE_TOKEN_ACCOUNT, REMOTE_TOKEN_ACCOUNT]) await secrets.get(account).catch(() => null);
  const hub = new StreamHub();
  const jobs = new JobRunner(db, { scrub: log.scrub, hub });
  // We hold the lock, so no live process runs any queued/running row: they were interrupted.
  const interrupted = jobs.markInterrupted();
  if (interrupted) log.warn('jobs left running by an earlier process marked interrupted', { count: interrupted });
  const closers: (() => void | Promise<void>)[] = [];
  const settings = new SettingsService(db, secrets, env, log);
  const base: Base = {
    home,
    env,
    role: opts.role ?? 'app',
    db,
    secrets,
    jobs,
    hub,
    log,
    settings,
    paths: { home: paths.home, database: paths.database, logs: paths.logs },
    onClose: (fn) => closers.push(fn),
  };
  const status = secrets.status();
  if (!status.available) log.warn('no OS keyring; secrets kept in memory for this run', { reason: status.message });
  log.info('core started', { pid: process.pid, role: base.role, keyring: status.backend });
  const dispatcher = new Dispatcher(allHandlers(base), log);
  // Without the endpoint this process still owns the home; a `povdesk call` then says it cannot reach it.
  const endpoint = await startOwnerEndpoint({ path: ownerFiles(home).endpoint, token: owner.token, dispatcher, hub, log }).catch((err) => {
    log.error('owner endpoint could not listen; `povdesk call` cannot reach this process', { error: (err as Error).message });
    return null;
  });
  // The app and serve also answer MCP over loopback HTTP (docs/mcp.md); a CLI core does not.
  const mcp =
    base.role === 'app'
      ? await startOwnerMcp({ base, dispatcher }, owner.token).catch((err) => {
          log.error('owner MCP endpoint could not listen', { error: (err as Error).message });
          return null;
        })
      : null;
  if (mcp) owner.describe({ mcpUrl: mcp.url });
  let closed = false;
  return {
    base,
    dispatcher,
    owner,
    async close() {
      if (closed) return;
      closed = true;
      for (const fn of closers.reverse()) {
        try {
          await fn();
        } catch (err) {
          log.error('close step failed', { error: (err as Error).message });
        }
      }
      await mcp?.close();
      await endpoint?.close();
      await jobs.shutdown();
      db.close();
      owner.release();
    },
  };
}
