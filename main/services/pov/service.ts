import { randomUUID } from 'node:crypto';
import { AppError } from '../../../shared/contract/errors';
import { JOB_KIND } from '../../../shared/contract/job-kinds';
import {
  canonicalTimeZone,
  ianaTimeZone,
  povActionRefusal,
  type OsValue,
  type PovActions,
  type PovView,
  type PovVmView,
} from '../../../shared/contract/pov';
import type { JobRunner } from '../jobs/runner';
import { requireCapability } from '../../../shared/lab-platforms';
import { PovLocks } from './locks';
import { runDestroy } from './destroy';
import { runReset, runSnapshot } from './clean-state';
import { runCreate, runPower, runRefreshVms } from './lifecycle';
import type { PlatformId } from '../lab-platforms/platform';
import { RECONCILE_INTERVAL_MS, ROUTINE_JOB_RETENTION_MS, reconcilePass, reconcilePlatform, unclearCreateCount } from './reconcile';
import { getPov, getVm, insertPov, listPovs, listVms, toPovView, toVmView, updatePov, type PovRow } from './repo';
import type { Events } from '../hub';
import type { LifecycleDeps } from './types';

/**
 * The POVs' collaborators: the lifecycle's (the platforms, the control node, PAM, auto-delete;
 * types.ts), the job runner, and the hub, where the service says `pov.changed` after writing a
 * row outside a job (PovUpdates, updates.ts, turns that into `pov.updated`).
 */
export interface PovServiceDeps extends LifecycleDeps {
  jobs: JobRunner;
  hub: Pick<Events, 'emit'>;
  /** Which job holds each POV; shared with the control-node service (default: this service's own). */
  locks?: PovLocks;
  log?: { info(msg: string, f?: Record<string, unknown>): void; warn(msg: string, f?: Record<string, unknown>): void };
}

/** The environment name sent to the lab platform (stored as env_name): the user's name plus a tag unique to the row. */
export function envNameFor(name: string, id: string): string {
  return `${name.slice(0, 200)} [povdesk ${id.slice(0, 8)}]`;
}

/** The contract's rule for a customer time zone, applied again here for callers inside main. */
function checkedTimeZone(tz: string): string {
  const r = ianaTimeZone.safeParse(tz);
  if (!r.success) throw new AppError('invalid_request', `Customer time zone "${tz}": ${r.error.issues[0]?.message ?? 'not a time zone'}.`);
  return canonicalTimeZone(r.data);
}

/**
 * POVs as jobs. At most one lifecycle job per POV runs at a time in this process; actions are
 * gated on the CONFIRMED state (povActionRefusal) and refused with conflict up front.
 */
export class PovService {
  readonly locks: PovLocks;
  private reconcileJob: string | null = null;

  constructor(private readonly deps: PovServiceDeps) {
    this.locks = deps.locks ?? new PovLocks(deps.jobs);
  }

  /** The views `pov.updated` compares: one POV (none when it is gone), or every POV including destroyed ones. */
  views(id?: string): PovView[] {
    return (id === undefined ? listPovs(this.deps.db, true) : [getPov(this.deps.db, id)].filter((r) => r !== null)).map((r) =>
      this.view(r),
    );
  }

  private now(): string {
    return (this.deps.now?.() ?? new Date()).toISOString();
  }

  private row(id: string): PovRow {
    const r = getPov(this.deps.db, id);
    if (!r) throw new AppError('not_found', `No POV ${id}; it may have been removed. Refresh the POV list.`);
    return r;
  }

  activeJob(povId: string): string | null {
    return this.locks.activeJob(povId);
  }

  /** The control-node install job running for this POV, if any. */
  installJob(povId: string): string | null {
    return this.locks.installJob(povId);
  }

  private gate(action: keyof PovActions, r: PovRow): void {
    const why = povActionRefusal(action, {
      state: r.state,
      runstate: r.runstate,
      envId: r.env_id,
      busy: this.activeJob(r.id) !== null,
      installing: this.installJob(r.id) !== null,
    });
    if (why) throw new AppError('conflict', why);
  }

  list(includeDestroyed = false): PovView[] {
    return listPovs(this.deps.db, includeDestroyed).map((r) => this.view(r));
  }

  get(id: string): { pov: PovView; vms: PovVmView[] } {
    const r = this.row(id);
    return { pov: this.view(r), vms: listVms(this.deps.db, id).map(toVmView) };
  }

  private view(r: PovRow): PovView {
    const v = toPovView(r, this.activeJob(r.id), this.installJob(r.id));
    const at = v.autoDelete?.at;
    if (!at) return v;
    return { ...v, autoDelete: { ...v.autoDelete!, ...this.deps.autoDelete.ladderView(r.id, at) } };
  }

  /**
   * autoDeleteAt: when Skytap deletes the environment (autoDelete.at checks it or sets the default). A local
   * POV has no auto-delete: an explicit time is refused with the registry's reason, none is set.
   */
  create(input: { platform?: PlatformId; templateId: string; name: string; autoDeleteAt?: string; customerTz?: string }): {
    jobId: string;
    povId: string;
  } {
    const platform = input.platform ?? 'skytap';
    requireCapability(platform, 'templates');
    if (platform !== 'skytap') {
      if (input.autoDeleteAt !== undefined) requireCapability(platform, 'schedules');
      if (!this.deps.local) throw new AppError('unsupported', 'The local lab platform is not wired in this process.');
    }
    // Checked before the row exists: a bad time or zone changes nothing.
    const autoDeleteAt = platform !== 'skytap' ? undefined : this.deps.autoDelete.at(input.autoDeleteAt);
    const customerTz = input.customerTz === undefined ? undefined : checkedTimeZone(input.customerTz);
    const id = randomUUID();
    insertPov(this.deps.db, {
      id,
      name: input.name,
      templateId: input.templateId,
      templateName: '',
      envName: envNameFor(input.name, id),
      at: this.now(),
      platform,
    });
    if (autoDeleteAt) updatePov(this.deps.db, id, { auto_delete_at: autoDeleteAt }, this.now());
    if (customerTz) updatePov(this.deps.db, id, { customer_tz: customerTz }, this.now());
    const jobId = this.locks.launch(JOB_KIND.povCreate, `Create POV "${input.name}"`, id, (ctx) => runCreate(this.deps, id, ctx));
    return { jobId, povId: id };
  }

  start(id: string): string {
    const r = this.row(id);
    this.gate('start', r);
    return this.locks.launch(JOB_KIND.povStart, `Start POV "${r.name}"`, id, (ctx) => runPower(this.deps, id, 'running', ctx));
  }

  suspend(id: string): string {
    const r = this.row(id);
    requireCapability(r.platform, 'suspend');
    this.gate('suspend', r);
    return this.locks.launch(JOB_KIND.povSuspend, `Suspend POV "${r.name}"`, id, (ctx) => runPower(this.deps, id, 'suspended', ctx));
  }

  /**
   * A control-node install still running is cancelled first (its own clean-up clears user_data
   * and revokes its agent while the environment still exists), then the environment goes.
   */
  destroy(id: string): string {
    const r = this.row(id);
    this.gate('destroy', r);
    const install = this.installJob(id);
    return this.locks.launch(JOB_KIND.povDestroy, `Destroy POV "${r.name}"`, id, async (ctx) => {
      if (install) {
        ctx.progress('cancel control-node install', 0.02, `job ${install}`);
        ctx.log(`cancelling the control-node install (job ${install}) before destroying`, 'warn');
        try {
          this.deps.jobs.cancel(install);
        } catch {
          /* it finished in the meantime */
        }
        await this.deps.jobs.wait(install);
      }
      return runDestroy(this.deps, id, ctx);
    });
  }

  refreshVms(id: string): string {
    const r = this.row(id);
    this.gate('refreshVms', r);
    return this.locks.launch(JOB_KIND.povRefreshVms, `Read VMs of POV "${r.name}"`, id, (ctx) => runRefreshVms(this.deps, id, ctx));
  }

  /** "Save clean state" of a local POV (clean-state.ts), from active with no job running. */
  snapshot(id: string): string {
    const r = this.localRow(id, 'Save clean state');
    return this.locks.launch(JOB_KIND.povSnapshot, `Save clean state of POV "${r.name}"`, id, (ctx) => runSnapshot(this.deps, id, ctx));
  }

  reset(id: string): string {
    const r = this.localRow(id, 'Reset to clean state');
    if (!r.clean_snapshot_at) throw new AppError('conflict', `POV "${r.name}" has no clean state yet: press Save clean state first.`);
    return this.locks.launch(JOB_KIND.povReset, `Reset POV "${r.name}" to its clean state`, id, (ctx) => runReset(this.deps, id, ctx));
  }

  /** A local POV's Internet access: its network's, which each VM follows from its next start. */
  async setInternetAccess(povId: string, on: boolean): Promise<PovView> {
    const r = this.localRow(povId, 'Internet access', true);
    if (r.env_id && this.deps.local?.setInternet) await this.deps.local.setInternet(r.env_id, on);
    updatePov(this.deps.db, povId, { internet_access: on ? 1 : 0 }, this.now());
    return this.get(povId).pov;
  }

  private localRow(id: string, what: string, anyState = false): PovRow {
    const r = this.row(id);
    if (r.platform !== 'local')
      throw new AppError('unsupported', `${what} is for POVs on this laptop; a Skytap environment has its own in Skytap.`);
    if (!anyState && r.state !== 'active') throw new AppError('conflict', `${what} needs an active POV; this one is ${r.state}.`);
    if (this.activeJob(id) !== null) throw new AppError('conflict', `POV "${r.name}" has a job running; wait for it to finish.`);
    return r;
  }

  /** The customer's time zone (null clears it), stored in its canonical IANA spelling. */
  setCustomerTz(povId: string, tz: string | null): PovView {
    this.row(povId);
    updatePov(this.deps.db, povId, { customer_tz: tz === null ? null : checkedTimeZone(tz) }, this.now());
    return this.get(povId).pov;
  }

  setVmOs(povId: string, vmId: string, os: OsValue | null): PovVmView {
    this.row(povId);
    const vm = getVm(this.deps.db, povId, vmId);
    if (!vm) throw new AppError('not_found', `POV ${povId} has no VM ${vmId}; press Refresh VMs and try again.`);
    this.deps.db.prepare('UPDATE pov_vms SET os_override = ? WHERE pov_id = ? AND vm_id = ?').run(os, povId, vmId);
    return toVmView(getVm(this.deps.db, povId, vmId)!);
  }

  /** One reconcile pass as a routine reconcile.runNow job; a pass already running is reused. */
  runReconcile(): string {
    if (this.reconcileJob) return this.reconcileJob;
    let jobId = '';
    jobId = this.deps.jobs.start(
      { kind: JOB_KIND.reconcile, title: 'Reconcile lab environments (Skytap and local)', subject: null, routine: true },
      async (ctx) => {
        try {
          // The vm-manager's POVs first: a Skytap account is not needed for them.
          const local =
            this.deps.local && this.platformRows('local') > 0
              ? await reconcilePlatform(this.deps, this.deps.local, ctx, (povId) => this.activeJob(povId) !== null)
              : null;
          // Skytap is read only when it manages something (a reconcile with no Skytap POV needs no account).
          if (this.platformRows('skytap') === 0 && unclearCreateCount(this.deps.db) === 0) {
            ctx.progress('done', 1, 'no managed Skytap environments');
            return {
              managed: 0,
              confirmed: 0,
              lookedUp: 0,
              gone: 0,
              skippedBusy: 0,
              errors: [],
              unclearChecked: 0,
              adopted: [],
              ...(local ? { local } : {}),
            };
          }
          const api = await this.deps.skytap(ctx.signal);
          const res = await reconcilePass(this.deps.db, api, ctx, {
            ...(this.deps.now ? { now: this.deps.now } : {}),
            ...(this.deps.createCheckMs !== undefined ? { createCheckMs: this.deps.createCheckMs } : {}),
            isBusy: (povId) => this.activeJob(povId) !== null,
            onRead: (envs, c) => this.deps.autoDelete.sweep(envs, c),
          });
          // An environment that appeared after an unclear create: finish provisioning it.
          for (const povId of res.adopted) {
            const r = this.row(povId);
            this.locks.launch(JOB_KIND.povCreate, `Finish creating POV "${r.name}" (adopted)`, povId, (c) =>
              runCreate(this.deps, povId, c),
            );
          }
          return local ? { ...res, local } : res;
        } finally {
          if (this.reconcileJob === jobId) this.reconcileJob = null;
        }
      },
    );
    this.reconcileJob = jobId;
    return jobId;
  }

  private platformRows(platform: string): number {
    return (
      this.deps.db
        .prepare("SELECT COUNT(*) AS n FROM povs WHERE platform = ? AND env_id IS NOT NULL AND state <> 'destroyed'")
        .get(platform) as { n: number }
    ).n;
  }

  managedCount(): number {
    const r = this.deps.db.prepare("SELECT COUNT(*) AS n FROM povs WHERE env_id IS NOT NULL AND state <> 'destroyed'").get() as {
      n: number;
    };
    return r.n;
  }

  /**
   * Re-runs the lifecycle of rows a previous process left half-way (provisioning or destroying
   * with no job here), and marks control-node installs left installing/waiting as failed (they
   * do not resume). Call once at start-up, after JobRunner.markInterrupted.
   */
  resumeInterrupted(): string[] {
    const rows = this.deps.db
      .prepare("SELECT * FROM povs WHERE state IN ('provisioning','destroying') ORDER BY created_at")
      .all() as PovRow[];
    // A control-node install does not resume (its code may have expired while nothing polled):
    // say so beside the Install control node button instead of showing a wait nobody runs.
    const stale = this.deps.db
      .prepare("SELECT id FROM povs WHERE control_node_status IN ('installing','waiting') AND state <> 'destroyed'")
      .all() as { id: string }[];
    for (const { id } of stale) {
      if (this.installJob(id) !== null) continue;
      updatePov(
        this.deps.db,
        id,
        {
          control_node_status: 'failed',
          control_node_reason:
            'the control-node install was interrupted when POV Desk stopped; press Install control node to start again (it ' +
            'replaces the code left in user_data)',
        },
        this.now(),
      );
    }
    const ids: string[] = [];
    for (const r of rows) {
      if (this.activeJob(r.id) !== null) continue;
      if (r.state === 'provisioning') {
        ids.push(this.locks.launch(JOB_KIND.povCreate, `Resume creating POV "${r.name}"`, r.id, (ctx) => runCreate(this.deps, r.id, ctx)));
      } else {
        ids.push(
          this.locks.launch(JOB_KIND.povDestroy, `Resume destroying POV "${r.name}"`, r.id, (ctx) => runDestroy(this.deps, r.id, ctx)),
        );
      }
    }
    return ids;
  }

  /**
   * The ten-minute sweep plus pruning of old routine jobs. Skips the pass (no job row) when no
   * environment is managed. Returns a stop function.
   */
  startSweeps(opts: { intervalMs?: number; retentionMs?: number; firstDelayMs?: number; unclearIntervalMs?: number } = {}): () => void {
    const tick = () => {
      try {
        const pruned = this.deps.jobs.pruneRoutine(opts.retentionMs ?? ROUTINE_JOB_RETENTION_MS);
        if (pruned) this.deps.log?.info('pruned routine jobs', { count: pruned });
        if (this.managedCount() > 0 || unclearCreateCount(this.deps.db) > 0) this.runReconcile();
      } catch (err) {
        this.deps.log?.warn('reconcile sweep could not start', { error: (err as Error).message });
      }
    };
    // While a create's outcome is unknown, look for its environment every minute, not every ten.
    const checkUnclear = () => {
      try {
        if (unclearCreateCount(this.deps.db) > 0) this.runReconcile();
      } catch (err) {
        this.deps.log?.warn('reconcile sweep could not start', { error: (err as Error).message });
      }
    };
    const first = setTimeout(tick, opts.firstDelayMs ?? 5000);
    const every = setInterval(tick, opts.intervalMs ?? RECONCILE_INTERVAL_MS);
    const unclear = setInterval(checkUnclear, opts.unclearIntervalMs ?? 60_000);
    for (const t of [first, every, unclear]) t.unref?.();
    return () => {
      clearTimeout(first);
      clearInterval(every);
      clearInterval(unclear);
    };
  }

  async setAutoDelete(povId: string, at: string): Promise<PovView> {
    requireCapability(this.row(povId).platform, 'schedules');
    await this.deps.autoDelete.move(povId, at);
    this.deps.hub.emit('pov.changed', { povId });
    return this.get(povId).pov;
  }

  /** Writes the control_node_* columns of a POV. */
  setControlNode(
    povId: string,
    patch: Partial<
      Pick<PovRow, 'control_node_name' | 'control_node_vm_id' | 'control_node_status' | 'control_node_reason' | 'control_node_mode'>
    >,
  ): void {
    this.row(povId);
    updatePov(this.deps.db, povId, patch, this.now());
    this.deps.hub.emit('pov.changed', { povId });
  }
}
