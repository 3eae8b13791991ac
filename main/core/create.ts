import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../shared/contract/errors';
import { ControlNodeService, type ControlNodeServiceDeps } from '../services/control-node/service';
import { controlPlaneFrom } from '../services/control-node/config';
import { DoctorService } from '../services/doctor/service';
import { diagnostics } from './diagnostics';
import { Ladder } from '../services/notify/ladder';
import { NotificationService } from '../services/notify/service';
import { PamService, type PamServiceDeps } from '../services/pam/service';
import { PovLocks } from '../services/pov/locks';
import { ReadinessService } from '../services/pov/readiness';
import { PovService } from '../services/pov/service';
import { PovUpdates } from '../services/pov/updates';
import { AutoDelete } from '../services/share/auto-delete';
import { listShares, toShareView } from '../services/share/repo';
import { ShareService } from '../services/share/service';
import { povSchedule } from '../services/share/pov-schedule';
import { SavedSkytap } from '../services/skytap/saved';
import { shareApi } from '../services/skytap/share-api';
import { SessionManager } from '../services/ssh/manager';
import { Terminals } from '../services/ssh/terminals';
import { BakeService } from '../services/bake/service';
import { LocalLabTemplates } from '../services/lab-platforms/local-lab-templates';
import { LabTemplateService } from '../services/lab-platforms/lab-templates';
import { ConnectedVmManager } from '../services/vm/service';
import { LocalManagerSupervisor } from '../services/vm/supervisor';
import { VmManagerClient } from '../vm-api/client';
import { hostForwardsFor, LocalPlatform, type LocalVmApi } from '../services/lab-platforms/local';
import type { TemplateSource } from '../services/lab-platforms/platform';
import { openSecretStore } from '../services/secrets/keytar';
import { registeringSecrets, type SecretStore } from '../services/secrets/store';
import { CONTROL_PLANE_ENV, CONTROL_PLANE_TOKEN_ACCOUNT, readConfig as readControlNodeConfig } from '../services/control-node/config';
import { REMOTE_TOKEN_ACCOUNT } from '../services/vm/service';
import { createLogger } from '../services/log/logger';
import { JobRunner } from '../services/jobs/runner';
import { SettingsService, SKYTAP_ENV, TOKEN_ACCOUNT as SKYTAP_TOKEN_ACCOUNT } from '../services/settings/settings';
import { openDatabase } from '../services/store/db';
import type { Base, Services } from './base';
import { Dispatcher } from './dispatch';
import { bakeDirs, opensshConfigFile, opensshKnownHostsFiles, pollMsFrom, sshAgentSocket } from './config';
import { allHandlers } from './handlers';
import { startOwnerMcp } from '../mcp/http';
import { startOwnerEndpoint } from './owner-endpoint';
import { retirement, type Retirement } from './retire';
import { ownerBusyError, ownerFiles, tryAcquireOwnerLock, type OwnerKind, type OwnerLock } from './owner';
import { defaultHome, pathsFor } from './paths';
import { StreamHub } from './streams';

export interface Core {
  base: Base;
  /** Every domain service, built once; the transports and the Electron shell reach them here. */
  services: Services;
  dispatcher: Dispatcher;
  /** The data directory's owner lock this core holds (see owner.ts). */
  owner: OwnerLock;
  /** When a one-shot process's core may close without cutting off other callers' jobs (retire.ts). */
  retirement: Retirement;
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
  /** Tests: shorter polls, a controllable clock, injected checkpoints (production leaves it unset). */
  tuning?: CoreTuning;
}

export interface CoreTuning {
  /** The clock of notifications, share links, auto-delete and its ladder. */
  now?: () => Date;
  controlNode?: Pick<ControlNodeServiceDeps, 'enrolPollMs' | 'controlPlane' | 'userData'>;
  pam?: Pick<PamServiceDeps, 'http' | 'agentTasks' | 'connectPollMs' | 'checkpoint'>;
  /** The Local lab platform's vm-manager (default: the one the Local VMs page is connected to) and its templates. */
  lab?: { api?: () => Promise<LocalVmApi>; templates?: TemplateSource };
}

/** How often the auto-delete ladder runs in the app. */
export const LADDER_INTERVAL_MS = 60_000;
/** Long calls (an import copies the whole disk): 15 minutes instead of the VM client's 60 s. */
const BAKE_CLIENT_TIMEOUT_MS = 15 * 60_000;

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
  for (const account of [SKYTAP_TOKEN_ACCOUNT, CONTROL_PLANE_TOKEN_ACCOUNT, REMOTE_TOKEN_ACCOUNT])
    await secrets.get(account).catch(() => null);
  const hub = new StreamHub((event, err) => log.warn('a reaction to a hub event failed', { event, error: (err as Error).message }));
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
  const pollMs = pollMsFrom(env);
  const { services, supervisor } = buildServices(base, { ...opts.tuning, ...(pollMs !== undefined ? { pollMs } : {}) });
  const dispatcher = new Dispatcher(allHandlers(base, services), log);
  if (base.role === 'app') startBackground(base, services, supervisor);
  // Without the endpoint this process still owns the home; a `povdesk call` then says it cannot reach it.
  const endpoint = await startOwnerEndpoint({ path: ownerFiles(home).endpoint, token: owner.token, dispatcher, hub, log }).catch((err) => {
    log.error('owner endpoint could not listen; `povdesk call` cannot reach this process', { error: (err as Error).message });
    return null;
  });
  // The app and serve also answer MCP over loopback HTTP (docs/mcp.md); a CLI core does not.
  const mcp =
    base.role === 'app'
      ? await startOwnerMcp({ base, dispatcher }, owner.mcpToken).catch((err) => {
          log.error('owner MCP endpoint could not listen', { error: (err as Error).message });
          return null;
        })
      : null;
  if (mcp) owner.describe({ mcpUrl: mcp.url });
  let closed = false;
  return {
    base,
    services,
    dispatcher,
    owner,
    retirement: retirement(jobs, endpoint),
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

/**
 * Every domain service, once, each given its collaborators, in an order where each one's are built
 * before it: Skytap access, the local VMs, notifications and share links with auto-delete, PAM, the
 * control node (sharing the POV job locks), the POVs (with those), readiness over all of them,
 * terminals, templates. Cross-domain reactions are not wired here: each service subscribes to the
 * hub's events it reacts to (DomainEvents in services/hub.ts).
 */
function buildServices(base: Base, tuning: CoreTuning & { pollMs?: number }): { services: Services; supervisor: LocalManagerSupervisor } {
  const { db, jobs, log, settings, secrets, env, hub } = base;
  const now = tuning.now ?? (() => new Date());
  const skytap = new SavedSkytap(settings);
  const localLabTemplates = new LocalLabTemplates({ dir: join(base.home, 'lab-templates'), log });

  // One supervisor of the local vm-manager for the VMs and the bakes.
  const supervisor = new LocalManagerSupervisor({ home: base.home, log, env });
  const vm = new ConnectedVmManager({ settings, secrets, jobs, hub, log, supervisor });
  // The manager and its VMs outlive the app on purpose; only the console followers stop.
  base.onClose(() => vm.close());

  const notify = new NotificationService({ db, settings, now, hub });
  const shareSkytap = async () => shareApi(await skytap.client());
  const shares = new ShareService({ db, secrets, skytap: shareSkytap, now, log, hub });
  const autoDelete = new AutoDelete({ db, skytap: shareSkytap, shares, notify, now });
  const ladder = new Ladder({ db, notify, now });

  const pam = new PamService({ db, jobs, secrets, settings, env, log, hub, ...tuning.pam });

  // The Local lab platform drives whichever vm-manager the Local VMs page is connected to.
  const local = new LocalPlatform({
    api: tuning.lab?.api ?? (async () => (await vm.target()).client),
    templates: tuning.lab?.templates ?? localLabTemplates,
    hostForwards: () => hostForwardsFor(readControlNodeConfig(settings, env)),
  });
  const locks = new PovLocks(jobs);
  const controlNode = new ControlNodeService({ db, settings, secrets, env, locks, skytap, local, hub, ...tuning.controlNode });

  const pov = new PovService({
    db,
    jobs,
    log,
    locks,
    hub,
    skytap: (signal) => skytap.client({ signal }),
    local,
    ...(tuning.pollMs !== undefined ? { pollMs: tuning.pollMs } : {}),
    controlNode,
    pam,
    autoDelete: povSchedule({ autoDelete, ladder, notify, now }),
  });

  const readiness = new ReadinessService({
    pov: (id) => pov.get(id).pov,
    pam: (id) => pam.status(id),
    // From the database only: the badge needs expiry and liveness, not the keychain's password flag.
    shares: (id) => listShares(db, id).map((s) => toShareView(s, false)),
    jobs: (id) => jobs.list({ subject: id, includeRoutine: true, limit: 100 }),
  });
  // pov.updated's rows carry the badge pov.list adds.
  new PovUpdates(
    hub,
    (id) => pov.views(id),
    (views) => readiness.badges(views),
  );

  const ssh = new SessionManager({
    db,
    secrets,
    hub,
    log,
    // A local attested VM's SSH port: its key is the one the vm-manager made and released to it after attestation.
    pretrusted: (host, port) => vm.pretrustedSshKey(host, port),
    opensshKnownHosts: opensshKnownHostsFiles(env),
    opensshConfig: opensshConfigFile(env),
    agentSocket: () => sshAgentSocket(env),
  });
  base.onClose(() => ssh.closeAll());
  const terminals = new Terminals({
    sessions: ssh,
    jobs,
    consoleSource: (id) => vm.consoleSource(id),
    sshSignIn: (id) => vm.sshSignIn(id),
  });

  const bake = new BakeService({
    home: base.home,
    jobs,
    allowedDirs: bakeDirs(base),
    log,
    vmm: async () => {
      if (vm.mode() !== 'local') {
        throw new AppError(
          'unsupported',
          'baking needs the local vm-manager (the proof boot and the image store are local): switch Local VMs → Connection to local',
        );
      }
      const ep = await supervisor.ensure();
      log.addSecret(ep.token);
      return { client: new VmManagerClient(ep.url, ep.token, BAKE_CLIENT_TIMEOUT_MS), stateDir: ep.stateDir };
    },
  });

  const labTemplates = new LabTemplateService({
    local: localLabTemplates,
    skytapTemplates: async () => (await skytap.client()).listTemplates(),
    vmImages: () => vm.images(),
  });

  // povdesk doctor: read-only probes of every account the app holds credentials for
  const doctor = new DoctorService({
    skytap,
    tenants: async () =>
      Promise.all(
        pov
          .list(false)
          .filter((p) => pam.tenants.saved(p.id))
          .map(async (p) => ({ povId: p.id, tenants: await pam.tenants.resolve(p.id) })),
      ),
    remoteVm: async () => (vm.mode() === 'remote' ? vm.target() : null),
    controlPlane: async () => {
      const url = readControlNodeConfig(settings, env).controlPlaneUrl;
      return url ? { plane: await controlPlaneFrom(settings, secrets, env), url } : null;
    },
    diagnostics: () => diagnostics(base, []),
    scrub: (text) => log.scrub(text),
    home: base.home,
    now,
  });

  return {
    services: {
      skytap,
      notify,
      shares,
      autoDelete,
      ladder,
      pam,
      controlNode,
      pov,
      readiness,
      vm,
      ssh,
      terminals,
      bake,
      localLabTemplates,
      labTemplates,
      doctor,
    },
    supervisor,
  };
}

/**
 * The app's background work (role 'app' only): lifecycle and wiring jobs left half-way by an
 * earlier process resume, the reconcile sweeps and the auto-delete ladder run (the ladder once at
 * start, so a step missed while the app was closed fires then), and a local vm-manager the app
 * used before is reattached.
 */
function startBackground(base: Base, s: Services, supervisor: LocalManagerSupervisor): void {
  const { log } = base;
  const resumed = s.pov.resumeInterrupted();
  if (resumed.length) log.warn('resumed POV lifecycle jobs left half-way by an earlier process', { count: resumed.length });
  base.onClose(s.pov.startSweeps());
  const rewired = s.pam.resumeInterrupted();
  if (rewired.length) log.warn('resumed BeyondTrust wiring jobs left running by an earlier process', { count: rewired.length });

  const tick = () => {
    try {
      s.ladder.tick();
    } catch (err) {
      log.warn('auto-delete ladder pass failed', { error: (err as Error).message });
    }
  };
  const first = setTimeout(tick, 2000);
  const every = setInterval(tick, LADDER_INTERVAL_MS);
  first.unref?.();
  every.unref?.();
  base.onClose(() => {
    clearTimeout(first);
    clearInterval(every);
  });

  // An app that used local VMs before reattaches at launch (or restarts a manager that died, which
  // then reattaches to its VMs); one that never did starts the manager on first use only.
  if (s.vm.mode() === 'local' && existsSync(supervisor.endpointFile)) {
    supervisor.ensure().catch((e: Error) => log.warn('local vm-manager not reattached at launch', { error: e.message }));
  }
}
