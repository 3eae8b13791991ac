import { AppError, toWireError } from '../../../shared/contract/errors';
import { sleep as abortableSleep } from '../../lib/sleep';
import { povTag, type LabEnvironment, type LabPlatform } from '../lab-platforms/platform';
import { getPov, updatePov, type PovRow } from './repo';
import { runControlNodeHook, runTeardownHook, type CreateResult } from './lifecycle';
import type { LifecycleDeps, StepContext } from './types';
import { applyLabVms, markAllVmsGone, type VmApplyResult } from './vms';

/**
 * The POV lifecycle over a LabPlatform whose environment id is named before anything is created
 * (the Local platform; Skytap keeps lifecycle.ts, with its busy/rate-limited/unclear-create rules).
 * Every function can be run again after any failure or crash and picks up from the database and
 * the platform:
 *
 * create:  row (provisioning) → template checked → env id + create_sent_at COMMITTED →
 *          [after-commit] → per VM [before-create-vm:<vm>] → create → [after-create-vm:<vm>] (a VM
 *          that already exists by name is kept, never made twice) → [after-create] → power on →
 *          wait running → [after-power-on] → read VMs → [after-vms] → active → control-node hook.
 *          A failure after the commit keeps the VMs and says Destroy.
 * destroy: → destroying → hooks → per VM [before-delete-vm:<vm>] → DELETE → [after-delete-vm:<vm>]
 *          → [after-delete] → wait until no VM of the environment is listed → [after-gone] →
 *          destroyed. A failure is `failed`, never `destroyed`.
 */

function nowIso(deps: LifecycleDeps): string {
  return (deps.now?.() ?? new Date()).toISOString();
}

function mustGet(deps: LifecycleDeps, id: string): PovRow {
  const row = getPov(deps.db, id);
  if (!row) throw new AppError('not_found', `No POV ${id}; refresh the POV list.`);
  return row;
}

const messageOf = (err: unknown) => toWireError(err).message;

export function platformOf(deps: LifecycleDeps, row: Pick<PovRow, 'platform'>): LabPlatform {
  const p = row.platform === 'local' ? deps.local : undefined;
  if (!p) throw new AppError('unsupported', `No lab platform "${row.platform}" is wired in this process.`);
  return p;
}

function record(deps: LifecycleDeps, povId: string, env: LabEnvironment): void {
  const at = nowIso(deps);
  updatePov(deps.db, povId, { runstate: env.runstate, rate_limited: 0, last_confirmed_at: at }, at);
}

/** Polls get() until `done`; gone (null) only satisfies a wait for gone. Records each reading. */
async function waitFor(
  deps: LifecycleDeps,
  p: LabPlatform,
  povId: string,
  envId: string,
  ctx: StepContext,
  what: string,
  done: (env: LabEnvironment | null) => boolean,
): Promise<LabEnvironment | null> {
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? abortableSleep;
  const started = now().getTime();
  const timeoutMs = deps.waitTimeoutMs ?? 30 * 60_000;
  for (;;) {
    const env = await p.get(envId);
    if (env) record(deps, povId, env);
    if (done(env)) return env;
    if (env === null) throw new AppError('not_found', `The vm-manager no longer lists any VM of ${envId} while waiting for it to be ${what}; it was deleted outside POV Desk.`);
    if (now().getTime() - started > timeoutMs) {
      throw new AppError('timeout', `Environment ${envId} was still ${env.runstate} after ${Math.round(timeoutMs / 60_000)} min of waiting to be ${what}.`);
    }
    ctx.progress(`wait until ${what}`, null, `${env.vms.map((v) => `${v.name} ${v.runstate}`).join(', ')}`);
    await sleep(deps.pollMs ?? 5000, ctx.signal);
  }
}

export async function runPlatformCreate(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<CreateResult> {
  const check = deps.checkpoint ?? (() => {});
  let row = mustGet(deps, povId);
  if (row.state !== 'provisioning') throw new AppError('conflict', `POV "${row.name}" is ${row.state}, not provisioning; nothing to create.`);
  const p = platformOf(deps, row);
  if (row.env_id === null) {
    ctx.progress('check template', 0.02);
    const name = await p.templateName(row.template_id);
    if (name === null) {
      const at = nowIso(deps);
      updatePov(deps.db, povId, { state: 'failed', error_message: `There is no ${p.id} template ${row.template_id}; nothing was created. Pick a template from the list and create again; press Destroy to remove this row.` }, at);
      throw new AppError('not_found', `No ${p.id} template ${row.template_id}; pick one from the template list.`);
    }
    const envId = p.envIdFor(povTag(povId));
    if (!envId) throw new AppError('internal', `The ${p.id} platform names environments on create; it runs the Skytap lifecycle.`);
    // COMMIT the id before anything exists: every VM made after this is found by its name.
    const at = nowIso(deps);
    updatePov(deps.db, povId, { template_name: name, env_id: envId, create_sent_at: at }, at);
    check('after-commit');
    row = mustGet(deps, povId);
  }
  const envId = row.env_id!;
  try {
    ctx.progress('create VMs', 0.1, `from template ${row.template_name}`);
    const made = await p.create({ envId, templateId: row.template_id, name: row.skytap_name }, (s) => check(s));
    record(deps, povId, made);
    ctx.log(`environment ${envId}: ${made.vms.map((v) => v.name).join(', ')}`);
    check('after-create');

    ctx.progress('power on', 0.3);
    const target = p.poweredRunstate('running');
    await p.power(envId, 'running');
    await waitFor(deps, p, povId, envId, ctx, target, (e) => e?.runstate === target || e?.runstate === 'failed');
    const env = await p.get(envId);
    if (env?.runstate === 'failed') throw new AppError('unavailable', `a VM of ${envId} failed to boot (${env.vms.filter((v) => v.runstate === 'failed').map((v) => v.name).join(', ')}); see its console on the POV's VMs tab`);
    check('after-power-on');

    ctx.progress('read VMs', 0.8);
    const applied = applyLabVms(deps.db, povId, env?.vms ?? [], nowIso(deps));
    check('after-vms');
    updatePov(deps.db, povId, { state: 'active', error_message: null }, nowIso(deps));
    ctx.progress('active', 0.9);
    const controlNode = await runControlNodeHook(deps, povId, ctx);
    ctx.progress('done', 1);
    return { envId, vms: applied, controlNode, adopted: false };
  } catch (err) {
    updatePov(
      deps.db,
      povId,
      {
        state: 'failed',
        error_message: `Provisioning stopped: ${messageOf(err)} The VMs of ${envId} that were made are kept on the vm-manager; press Destroy to remove them.`,
      },
      nowIso(deps),
    );
    throw err;
  }
}

export async function runPlatformPower(deps: LifecycleDeps, povId: string, target: 'running' | 'suspended', ctx: StepContext): Promise<{ runstate: string }> {
  const row = mustGet(deps, povId);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no environment.`);
  const p = platformOf(deps, row);
  const want = p.poweredRunstate(target);
  const verb = target === 'running' ? 'start' : 'suspend';
  ctx.progress(verb, 0.2, target === 'running' ? 'starting every stopped VM' : 'stopping every VM (the vm-manager\'s stop; they boot again from disk on start)');
  await p.power(row.env_id, target);
  const env = await waitFor(deps, p, povId, row.env_id, ctx, want, (e) => e?.runstate === want);
  ctx.progress('done', 1, `environment is ${env!.runstate}`);
  return { runstate: env!.runstate };
}

export async function runPlatformRefreshVms(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<VmApplyResult> {
  const row = mustGet(deps, povId);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no environment, so it has no VMs.`);
  const p = platformOf(deps, row);
  ctx.progress('read VMs', 0.2);
  const env = await p.get(row.env_id);
  if (env) record(deps, povId, env);
  const res = applyLabVms(deps.db, povId, env?.vms ?? [], nowIso(deps));
  if (res.emptyRead) ctx.log('the vm-manager lists no VM of this POV; kept the VM rows as they were (an empty read never prunes)', 'warn');
  ctx.progress('done', 1, `${res.seen} VM(s), ${res.markedGone} marked gone`);
  return res;
}

export async function runPlatformDestroy(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<{ envId: string | null }> {
  const check = deps.checkpoint ?? (() => {});
  const row = mustGet(deps, povId);
  if (row.state === 'destroyed') return { envId: row.env_id };
  if (row.state === 'provisioning') throw new AppError('conflict', `POV "${row.name}" is still provisioning; wait for it to finish or fail, then destroy it.`);
  updatePov(deps.db, povId, { state: 'destroying', error_message: null }, nowIso(deps));
  try {
    const p = platformOf(deps, row);
    if (deps.teardownPam) {
      ctx.progress('unwire BeyondTrust', 0.03);
      try {
        await deps.teardownPam(povId, ctx);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        ctx.log(`could not unwire BeyondTrust: ${messageOf(err)} The environment is destroyed anyway; remove what is left in the tenants (Access panel → Unwire).`, 'warn');
      }
    }
    ctx.progress('revoke control node agent', 0.05);
    await runTeardownHook(deps, povId, ctx);
    const envId = row.env_id;
    if (envId !== null) {
      check('before-delete');
      ctx.progress('delete VMs', 0.2);
      const outcome = await p.delete(envId, (s) => check(s));
      ctx.log(`delete of ${envId}: ${outcome}`);
      check('after-delete');
      ctx.progress('wait until gone', 0.6);
      await waitFor(deps, p, povId, envId, ctx, 'gone', (e) => e === null);
      check('after-gone');
    }
    const at = nowIso(deps);
    deps.db.transaction(() => {
      updatePov(deps.db, povId, { state: 'destroyed', runstate: null, rate_limited: 0, env_gone_at: at, error_message: null }, at);
      markAllVmsGone(deps.db, povId, at);
    })();
    ctx.progress('done', 1, 'environment deleted');
    return { envId };
  } catch (err) {
    updatePov(
      deps.db,
      povId,
      {
        state: 'failed',
        error_message:
          `Destroy did not finish: ${messageOf(err)} ` +
          (row.env_id ? `VMs of ${row.env_id} may still exist on the vm-manager; ` : '') +
          'press Destroy again once the cause is cleared.',
      },
      nowIso(deps),
    );
    throw err;
  }
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
      if (env) {
        record(deps, row.id, env);
        out.confirmed++;
        continue;
      }
      // Never seen (a create that failed before its first VM): the row's Destroy says so, not the sweep.
      if (isBusy(row.id) || row.state === 'provisioning' || row.last_confirmed_at === null) continue;
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
            error_message: row.state === 'destroying' ? null : `The vm-manager lists no VM of ${row.env_id} any more (${at}); they were deleted outside POV Desk.`,
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
      (deps.db.prepare("SELECT env_id FROM povs WHERE platform = ? AND env_id IS NOT NULL AND state <> 'destroyed'").all(p.id) as { env_id: string }[]).map((r) => r.env_id),
    );
    for (const env of await p.findByTag()) {
      if (live.has(env.id)) continue;
      out.leftovers.push(env.id);
      ctx.log(`the vm-manager has VMs named ${env.id}-… that no POV here owns; delete them on the Local VMs page if they are this app's`, 'warn');
    }
  } catch (err) {
    out.errors.push(`could not look for leftovers: ${messageOf(err)}`);
  }
  return out;
}
