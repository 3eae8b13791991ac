import { mkdirSync } from 'node:fs';
import { openSecretStore } from '../services/secrets/keytar';
import type { SecretStore } from '../services/secrets/store';
import { createLogger } from '../services/log/logger';
import { JobRunner } from '../services/jobs/runner';
import { SettingsService } from '../services/settings/settings';
import { openDatabase } from '../services/store/db';
import type { Base } from './base';
import { Dispatcher } from './dispatch';
import { allHandlers } from './handlers';
import { defaultHome, pathsFor } from './paths';
import { StreamHub } from './streams';

export interface Core {
  base: Base;
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

export interface CoreOptions {
  env?: NodeJS.ProcessEnv;
  home?: string;
  role?: Base['role'];
  /** Log file name under <home>/logs (one per process kind). */
  logName?: string;
  secrets?: SecretStore;
}

/** Builds every service once: database, keychain, jobs, streams, settings, and the handlers. */
export async function createCore(opts: CoreOptions = {}): Promise<Core> {
  const env = opts.env ?? process.env;
  const home = opts.home ?? defaultHome(env);
  const paths = pathsFor(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const log = createLogger({ dir: paths.logs, name: opts.logName ?? 'core' });
  // Cold start: the keyring probe (three D-Bus round trips, ~16 ms warm and ~180 ms on a keyring's
  // first use) is started before the database opens, so its first round trip overlaps the migrations.
  const secretsProbe = opts.secrets ? null : openSecretStore();
  const db = openDatabase(paths.database);
  const secrets = opts.secrets ?? (await secretsProbe!);
  const hub = new StreamHub();
  const jobs = new JobRunner(db);
  const interrupted = jobs.markInterrupted();
  if (interrupted) log.warn('jobs left running by an earlier process marked interrupted', { count: interrupted });
  jobs.onChange((job) => {
    hub.publish('jobs.update', job.id, job);
  });
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
  let closed = false;
  return {
    base,
    dispatcher,
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
      await jobs.shutdown();
      db.close();
    },
  };
}
