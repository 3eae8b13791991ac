import { toWireError } from '../../../shared/contract/errors';
import type { LabPlatform } from '../lab-platforms/platform';
import type { Environment } from '../skytap/schemas';
import type { Db } from '../store/db';
import { updatePov, type PovRow } from './repo';
import type { LifecycleDeps, SkytapApi, StepContext } from './types';
import { messageOf, nowIso } from './steps';
import { recordReading } from './wait';
import { markAllVmsGone } from './vms';
import { sweepUnclearCreates } from './unclear-create';

export const RECONCILE_INTERVAL_MS = 10 * 60_000;
/** Finished reconcile.runNow jobs older than this are pruned (the same retention as other sweeps). */
export const ROUTINE_JOB_RETENTION_MS = 7 * 24 * 3600_000;

export interface ReconcileResult {
  managed: number;
  confirmed: number;
  lookedUp: number;
  gone: number;
  skippedBusy: number;
  errors: string[];
  /** Unclear creates looked up by name, and the POVs whose environment appeared (unclear-create.ts). */
  unclearChecked: number;
  adopted: string[];
}

/**
 * One pass of the reconcile sweep: ONE paginated collection read (listEnvironments walks every
 * page) covers every managed environment, instead of a GET per POV. A managed environment absent
 * from that read is looked up once with GET before it is called gone: a listing can miss an
 * environment created a moment ago, or one outside the Project ID's scope.
 *
 * Rows whose lifecycle job is running (`isBusy`) still get their reading, but the sweep never
 * changes their state; their job owns it.
 */
export async function reconcilePass(
  db: Db,
  api: SkytapApi,
  ctx: StepContext,
  opts: {
    now?: () => Date;
    isBusy?: (povId: string) => boolean;
    createCheckMs?: number;
    /** Also given the environments read (the share work reads portals and schedules from them). */
    onRead?: (envs: Environment[], ctx: StepContext) => Promise<void>;
  } = {},
): Promise<ReconcileResult> {
  const now = opts.now ?? (() => new Date());
  const rows = db
    .prepare("SELECT * FROM povs WHERE platform = 'skytap' AND env_id IS NOT NULL AND state <> 'destroyed' ORDER BY created_at")
    .all() as PovRow[];
  const result: ReconcileResult = {
    managed: rows.length,
    confirmed: 0,
    lookedUp: 0,
    gone: 0,
    skippedBusy: 0,
    errors: [],
    unclearChecked: 0,
    adopted: [],
  };
  if (rows.length === 0 && unclearCreateCount(db) === 0) {
    ctx.progress('done', 1, 'no managed environments');
    return result;
  }
  ctx.progress('read environments', 0.1, `one collection read for ${rows.length} environment(s)`);
  const envs = await api.listEnvironments();
  const unclear = sweepUnclearCreates(db, envs, ctx, now(), opts.createCheckMs);
  result.unclearChecked = unclear.checked;
  result.adopted = unclear.adopted;
  const byId = new Map(envs.map((e) => [e.id, e]));
  const at = now().toISOString();
  const missing: PovRow[] = [];
  db.transaction(() => {
    for (const row of rows) {
      const env = byId.get(row.env_id!);
      if (!env) {
        missing.push(row);
        continue;
      }
      updatePov(db, row.id, { runstate: env.runstate, rate_limited: env.rate_limited ? 1 : 0, last_confirmed_at: at }, at);
      result.confirmed++;
    }
  })();
  if (opts.onRead) {
    try {
      await opts.onRead(envs, ctx);
    } catch (err) {
      const msg = `share links / auto-delete check failed: ${toWireError(err).message}`;
      result.errors.push(msg);
      ctx.log(msg, 'warn');
    }
  }
  ctx.progress('look up missing', 0.6, `${missing.length} not in the listing`);
  for (const row of missing) {
    if (ctx.signal.aborted) break;
    result.lookedUp++;
    try {
      const env = await api.getEnvironment(row.env_id!);
      const t = now().toISOString();
      if (env) {
        updatePov(db, row.id, { runstate: env.runstate, rate_limited: env.rate_limited ? 1 : 0, last_confirmed_at: t }, t);
        result.confirmed++;
        continue;
      }
      if (opts.isBusy?.(row.id)) {
        result.skippedBusy++;
        continue;
      }
      db.transaction(() => {
        updatePov(
          db,
          row.id,
          {
            state: 'destroyed',
            runstate: null,
            rate_limited: 0,
            env_gone_at: t,
            last_confirmed_at: t,
            error_message:
              row.state === 'destroying'
                ? null
                : `Environment ${row.env_id} no longer exists in Skytap (404 at ${t}); it was deleted outside POV Desk.`,
          },
          t,
        );
        markAllVmsGone(db, row.id, t);
      })();
      result.gone++;
      ctx.log(`environment ${row.env_id} of POV "${row.name}" answered 404: marked destroyed`, 'warn');
    } catch (err) {
      const msg = `could not look up environment ${row.env_id}: ${toWireError(err).message}`;
      result.errors.push(msg);
      ctx.log(msg, 'warn');
    }
  }
  ctx.progress('done', 1, `${result.confirmed} confirmed, ${result.gone} gone`);
  return result;
}

/** Rows whose create's outcome is still unknown (see unclear-create.ts). */
export function unclearCreateCount(db: Db): number {
  return (
    db.prepare("SELECT COUNT(*) AS n FROM povs WHERE state = 'failed' AND env_id IS NULL AND create_sent_at IS NOT NULL").get() as {
      n: number;
    }
  ).n;
}

/**
 * The sweep's pass over a platform's POVs: one list read per POV (cheap on a vm-manager). A POV
 * none of whose VMs is listed any more is destroyed (deleted outside POV Desk) unless a job holds
 * it, it is still provisioning, or its environment was never seen. VMs carrying a POV tag that no live row owns are reported (never
 * deleted: a remote manager may be shared with other apps).
 */
export async function reconcilePlatform(
  deps: LifecycleDeps,
  p: LabPlatform,
  ctx: StepContext,
  isBusy: (povId: string) => boolean,
): Promise<{ managed: number; confirmed: number; gone: number; leftovers: string[]; errors: string[] }> {
  const rows = deps.db
    .prepare("SELECT * FROM povs WHERE platform = ? AND env_id IS NOT NULL AND state <> 'destroyed' ORDER BY created_at")
    .all(p.id) as PovRow[];
  const out = { managed: rows.length, confirmed: 0, gone: 0, leftovers: [] as string[], errors: [] as string[] };
  for (const row of rows) {
    if (ctx.signal.aborted) break;
    try {
      const env = await p.get(row.env_id!);
      if (env && !env.remnant) {
        recordReading(deps.db, row.id, env, nowIso(deps));
        out.confirmed++;
        continue;
      }
      // Never seen (a create that failed before its first VM): the row's Destroy says so, not the sweep.
      if (isBusy(row.id) || row.state === 'provisioning' || row.last_confirmed_at === null) continue;
      if (env?.remnant) {
        // Its VMs went outside POV Desk; what the platform made with them (Local: the POV's own network) goes too.
        await p.delete(row.env_id!);
        ctx.log(`removed what was left of ${row.env_id} (its network) after its VMs were deleted outside POV Desk`, 'warn');
      }
      const at = nowIso(deps);
      deps.db.transaction(() => {
        updatePov(
          deps.db,
          row.id,
          {
            state: 'destroyed',
            runstate: null,
            env_gone_at: at,
            last_confirmed_at: at,
            error_message:
              row.state === 'destroying'
                ? null
                : `The vm-manager lists no VM of ${row.env_id} any more (${at}); they were deleted outside POV Desk.`,
          },
          at,
        );
        markAllVmsGone(deps.db, row.id, at);
      })();
      out.gone++;
      ctx.log(`no VM of ${row.env_id} (POV "${row.name}") is listed: marked destroyed`, 'warn');
    } catch (err) {
      const msg = `could not read ${row.env_id}: ${messageOf(err)}`;
      out.errors.push(msg);
      ctx.log(msg, 'warn');
    }
  }
  try {
    const live = new Set(
      (
        deps.db.prepare("SELECT env_id FROM povs WHERE platform = ? AND env_id IS NOT NULL AND state <> 'destroyed'").all(p.id) as {
          env_id: string;
        }[]
      ).map((r) => r.env_id),
    );
    for (const env of await p.findByTag()) {
      if (live.has(env.id)) continue;
      out.leftovers.push(env.id);
      ctx.log(
        `the vm-manager has VMs named ${env.id}-… that no POV here owns; delete them on the Local VMs page if they are this app's`,
        'warn',
      );
    }
  } catch (err) {
    out.errors.push(`could not look for leftovers: ${messageOf(err)}`);
  }
  return out;
}
