import { rmSync } from 'node:fs';
import type { Args, MethodName, Result } from '../../shared/contract';
import type { Base, Services } from '../../main/core/base';
import { createCore, type Core, type CoreOptions, type CoreTuning } from '../../main/core/create';
import type { JobRunner } from '../../main/services/jobs/runner';
import { MemorySecretStore, type SecretStore } from '../../main/services/secrets/store';
import type { Db } from '../../main/services/store/db';
import { stopManager } from './manager';
import { tempDir } from './temp-dirs';

export interface TestCoreOptions {
  /** Default: a fresh temp directory, removed by close(). */
  home?: string;
  /** The core's environment (POVDESK_HOME is set to the home). */
  env?: NodeJS.ProcessEnv;
  /** Default: an in-memory store (the keyring suite passes none and uses the real keychain). */
  secrets?: SecretStore | 'keychain';
  role?: Base['role'];
  tuning?: CoreTuning;
  logName?: string;
}

/** The real core of a test: createCore over a temp home, and calls through the real Dispatcher. */
export interface TestCore {
  readonly core: Core;
  readonly home: string;
  readonly base: Base;
  readonly services: Services;
  readonly db: Db;
  readonly jobs: JobRunner;
  /** A contract call as a transport makes it: arguments and result checked by the Dispatcher. */
  call<M extends MethodName>(method: M, args?: Args<M>): Promise<Result<M>>;
  /** Closes the core and builds a new one over the same home and secret store (an app restart). */
  restart(): Promise<void>;
  /** Closes the core; for a home it made, stops the vm-manager its calls started there and removes the home. */
  close(): Promise<void>;
}

export function memorySecrets(available = false): SecretStore {
  return new MemorySecretStore({ backend: 'memory', available, message: 'test', remedy: null });
}

export async function testCore(opts: TestCoreOptions = {}): Promise<TestCore> {
  // one a test never closes is still swept after its file (tempDir)
  const home = opts.home ?? tempDir('povdesk-core-');
  const secrets = opts.secrets === 'keychain' ? undefined : (opts.secrets ?? memorySecrets());
  const build = () => {
    const o: CoreOptions = { home, env: { ...opts.env, POVDESK_HOME: home }, role: opts.role ?? 'test' };
    if (secrets) o.secrets = secrets;
    if (opts.tuning) o.tuning = opts.tuning;
    if (opts.logName) o.logName = opts.logName;
    return createCore(o);
  };
  let core = await build();
  return {
    get core() {
      return core;
    },
    home,
    get base() {
      return core.base;
    },
    get services() {
      return core.services;
    },
    get db() {
      return core.base.db;
    },
    get jobs() {
      return core.base.jobs;
    },
    async call(method, args) {
      return (await core.dispatcher.call(method, args, { transport: 'test' })) as never;
    },
    async restart() {
      await core.close();
      core = await build();
    },
    async close() {
      await core.close();
      if (opts.home) return;
      // The app leaves its manager running on purpose (its VMs outlive it); a test's must not.
      await stopManager(home);
      rmSync(home, { recursive: true, force: true });
    },
  };
}
