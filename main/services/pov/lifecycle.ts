import { AppError, toWireError } from '../../../shared/contract/errors';
import type { Environment } from '../skytap/schemas';
import { getPov, updatePov, type PovRow } from './repo';
import { sleep as abortableSleep } from '../../lib/sleep';
import type { LifecycleDeps, SkytapApi, StepContext } from './types';
import { markAllVmsGone, applyVmRead, type VmApplyResult } from './vms';
import { pollEnvironment, recordReading } from './wait';
import { checkDeadline, isMaybeCreated, markCreateUnclear } from './unclear-create';

/**
 * The POV lifecycle. Every function here can be run again after any failure or crash and picks
 * up from what the database and Skytap say, never from memory:
 *
 * create:  row (provisioning) → [before-create] → POST → [after-create] → env id COMMITTED →
 *          [after-commit] → wait not busy → [after-wait] → PUT running + wait → [after-power-on]
 *          → read VMs → [after-vms] → active → control-node hook (cannot fail the provision).
 * destroy: → destroying → [before-delete] → DELETE → [after-delete] → poll until GET is 404 →
 *          [after-gone] → destroyed.
 *
 * The window between POST returning and the commit cannot be closed, so the POST carries the
 * row's tag in the environment name (skytap_name) and a re-run first looks for an environment
 * with that name: an interrupted create adopts its environment instead of leaving an orphan.
 */

function nowIso(deps: LifecycleDeps): string {
  return (deps.now?.() ?? new Date()).toISOString();
}

function mustGet(deps: LifecycleDeps, id: string): PovRow {
  const row = getPov(deps.db, id);
  if (!row) throw new AppError('not_found', `No POV ${id}; refresh the POV list.`);
  return row;
}

function messageOf(err: unknown): string {
  return toWireError(err).message;
}

/** Finds the environment an earlier, interrupted create made for this row (by its tagged name). */
async function findAdoptable(api: SkytapApi, row: PovRow): Promise<Environment | null> {
  const envs = await api.listEnvironments();
  const matches = envs.filter((e) => e.name === row.skytap_name);
  return matches[0] ?? null;
}

export interface CreateResult {
  envId: string;
  vms: VmApplyResult | null;
  controlNode: 'installed' | 'failed' | 'skipped';
  adopted: boolean;
}

export async function runCreate(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<CreateResult> {
  const check = deps.checkpoint ?? (() => {});
  let row = mustGet(deps, povId);
  if (row.state !== 'provisioning') {
    throw new AppError('conflict', `POV "${row.name}" is ${row.state}, not provisioning; nothing to create.`);
  }
  const api = await deps.skytap(ctx.signal);
  let adopted = false;

  // Step 0: the template must be visible to this account (and gives the row its name).
  if (row.env_id === null && row.template_name === '') {
    ctx.progress('check template', 0.02);
    const templates = await api.listTemplates();
    const t = templates.find((x) => x.id === row.template_id);
    if (!t) {
      updatePov(
        deps.db,
        povId,
        {
          state: 'failed',
          error_message: `Template ${row.template_id} is not visible to this Skytap account (or project); nothing was created. Pick a template from the list and create again; press Destroy to remove this row.`,
        },
        nowIso(deps),
      );
      throw new AppError('not_found', `Skytap template ${row.template_id} is not visible to this account or project; pick one from the template list.`);
    }
    updatePov(deps.db, povId, { template_name: t.name }, nowIso(deps));
    row = mustGet(deps, povId);
  }

  // Step 1: the environment. Adopt first (cheap insurance for a re-run), create only when none.
  if (row.env_id === null) {
    // Only a row whose POST may already have been sent needs the (paginated) adoption lookup.
    let found: Environment | null = null;
    if (row.create_sent_at !== null) {
      ctx.progress('create environment', 0.05, 'Looking for the environment an earlier attempt created');
      found = await findAdoptable(api, row);
    }
    if (row.create_sent_at !== null && !found) {
      // An earlier POST may still make it (this process or one before it died with it in flight):
      // never send a second create; the sweep keeps looking (unclear-create.ts).
      throw markCreateUnclear(deps.db, row, 'An earlier attempt sent the create and its outcome is unknown.', nowIso(deps), deps.createCheckMs);
    }
    check('before-create');
    let env: Environment;
    if (found) {
      env = found;
      adopted = true;
      ctx.log(`adopting environment ${found.id} created by an interrupted attempt`, 'warn');
    } else {
      ctx.progress('create environment', 0.1, `POST /configurations from template ${row.template_id}`);
      updatePov(deps.db, povId, { create_sent_at: nowIso(deps) }, nowIso(deps));
      try {
        env = await api.createEnvironment({ templateId: row.template_id, name: row.skytap_name });
      } catch (err) {
        // The create is never re-sent; but it may have reached Skytap, so look once before failing.
        const maybe = await findAdoptable(api, row).catch(() => null);
        // Lost answers and a cancel while the POST was out both leave the outcome unknown.
        if (!maybe && (isMaybeCreated(err) || ctx.signal.aborted)) {
          throw markCreateUnclear(deps.db, mustGet(deps, povId), `Skytap's answer to the create was lost: ${messageOf(err)}`, nowIso(deps), deps.createCheckMs);
        }
        if (!maybe) {
          // Skytap refused the create outright, so it made nothing.
          const at = nowIso(deps);
          updatePov(
            deps.db,
            povId,
            {
              state: 'failed',
              create_sent_at: null,
              error_message: `Skytap did not create the environment: ${messageOf(err)} No environment was found under this POV's name, so nothing is billing; press Destroy to remove this row.`,
            },
            at,
          );
          throw err;
        }
        env = maybe;
        adopted = true;
        ctx.log(`create reported an error but the environment ${maybe.id} exists; adopting it`, 'warn');
      }
    }
    check('after-create');
    // COMMIT the id before anything else can fail.
    const at = nowIso(deps);
    updatePov(
      deps.db,
      povId,
      { env_id: env.id, runstate: env.runstate, rate_limited: env.rate_limited ? 1 : 0, last_confirmed_at: at },
      at,
    );
    check('after-commit');
    ctx.log(`environment ${env.id} recorded`);
    row = mustGet(deps, povId);
  }
  const envId = row.env_id!;
  if (deps.armAutoDelete && !row.schedule_id) {
    ctx.progress('arm auto-delete', 0.25);
    try {
      await deps.armAutoDelete(povId, ctx);
    } catch (err) {
      ctx.log(`auto-delete is not armed: ${messageOf(err)} The sweep flags it; press Re-arm on the POV.`, 'warn');
    }
  }

  try {
    ctx.progress('wait until not busy', 0.3);
    const settled = await pollEnvironment(deps, api, povId, envId, ctx, 'not busy', (e) => e.runstate !== 'busy');
    check('after-wait');

    ctx.progress('power on', 0.5, 'PUT runstate running');
    if (settled.runstate !== 'running') {
      if (settled.rate_limited) {
        ctx.log('a power operation is already queued by Skytap (rate_limited); not re-submitting', 'warn');
      } else {
        const env = await api.setRunstate(envId, 'running');
        recordReading(deps.db, povId, env, nowIso(deps));
      }
      await pollEnvironment(deps, api, povId, envId, ctx, 'running', (e) => e.runstate === 'running');
    }
    check('after-power-on');

    ctx.progress('read VMs', 0.8);
    const vms = await api.listVms(envId);
    const applied = applyVmRead(deps.db, povId, vms, nowIso(deps));
    if (applied.emptyRead) ctx.log('Skytap returned no VMs; kept the VM rows as they were', 'warn');
    check('after-vms');

    updatePov(deps.db, povId, { state: 'active', error_message: null }, nowIso(deps));
    ctx.progress('active', 0.9);

    const controlNode = await runControlNodeHook(deps, povId, ctx);
    ctx.progress('done', 1);
    return { envId, vms: applied, controlNode, adopted };
  } catch (err) {
    const at = nowIso(deps);
    updatePov(
      deps.db,
      povId,
      {
        state: 'failed',
        error_message:
          `Provisioning stopped: ${messageOf(err)} Environment ${envId} still exists in Skytap and may be billing; ` +
          'press Destroy to remove it.',
      },
      at,
    );
    throw err;
  }
}

/**
 * The control-node install after power-on. Its failure is recorded beside the row, never fatal.
 * When the installer has already recorded its own outcome on the row (e.g. `none` with the
 * resolution's refusal), that status stays: only an error the installer did not record becomes
 * `failed` with the error as the reason.
 */
export async function runControlNodeHook(
  deps: LifecycleDeps,
  povId: string,
  ctx: StepContext,
): Promise<'installed' | 'failed' | 'skipped'> {
  if (!deps.installControlNode) return 'skipped';
  ctx.progress('install control node', 0.92);
  const before = mustGet(deps, povId);
  try {
    await deps.installControlNode(povId, ctx);
    return 'installed';
  } catch (err) {
    const reason = messageOf(err);
    ctx.log(`control node install failed (the POV stays active): ${reason}`, 'warn');
    const now = getPov(deps.db, povId);
    const recorded =
      now !== null &&
      now.control_node_status !== null &&
      (now.control_node_status !== before.control_node_status ||
        now.control_node_reason !== before.control_node_reason ||
        now.control_node_reason === reason);
    if (!recorded) {
      updatePov(deps.db, povId, { control_node_status: 'failed', control_node_reason: reason }, nowIso(deps));
    }
    return 'failed';
  }
}

/** The control-node teardown at the start of a destroy: logged on the job and the row, never fatal. */
export async function runTeardownHook(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<void> {
  if (!deps.teardownControlNode) return;
  try {
    await deps.teardownControlNode(povId, ctx);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const reason =
      `could not revoke the control node's agent: ${messageOf(err)} ` +
      'The environment is destroyed anyway; revoke the agent in the control plane.';
    ctx.log(reason, 'warn');
    updatePov(deps.db, povId, { control_node_reason: reason }, nowIso(deps));
  }
}

export async function runPower(
  deps: LifecycleDeps,
  povId: string,
  target: 'running' | 'suspended',
  ctx: StepContext,
): Promise<{ runstate: string }> {
  const row = mustGet(deps, povId);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no Skytap environment.`);
  const api = await deps.skytap(ctx.signal);
  const verb = target === 'running' ? 'start' : 'suspend';
  // Read first: Skytap's best practice is never to mutate a busy environment, and a queued
  // (rate-limited) operation must not be re-submitted.
  ctx.progress(verb, 0.1, 'reading the environment');
  let env = await pollEnvironment(deps, api, povId, row.env_id, ctx, 'not busy', (e) => e.runstate !== 'busy' || e.rate_limited);
  if (env.runstate !== target && !env.rate_limited) {
    ctx.progress(verb, 0.3, `PUT runstate ${target}`);
    env = await api.setRunstate(row.env_id, target);
    recordReading(deps.db, povId, env, nowIso(deps));
  } else if (env.rate_limited) {
    ctx.log('Skytap already has a queued power operation (rate_limited); polling instead of re-submitting', 'warn');
  }
  env = await pollEnvironment(deps, api, povId, row.env_id, ctx, target, (e) => e.runstate === target);
  ctx.progress('done', 1, `environment is ${env.runstate}`);
  return { runstate: env.runstate };
}

export async function runRefreshVms(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<VmApplyResult> {
  const row = mustGet(deps, povId);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no Skytap environment, so it has no VMs.`);
  const api = await deps.skytap(ctx.signal);
  ctx.progress('read VMs', 0.2);
  const vms = await api.listVms(row.env_id);
  const res = applyVmRead(deps.db, povId, vms, nowIso(deps));
  if (res.emptyRead) ctx.log('Skytap returned no VMs; kept the VM rows as they were (an empty read never prunes)', 'warn');
  ctx.progress('done', 1, `${res.seen} VM(s), ${res.markedGone} marked gone`);
  return res;
}

export async function runDestroy(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<{ envId: string | null }> {
  const check = deps.checkpoint ?? (() => {});
  let row = mustGet(deps, povId);
  if (row.state === 'destroyed') return { envId: row.env_id };
  if (row.state === 'provisioning') {
    throw new AppError('conflict', `POV "${row.name}" is still provisioning; wait for it to finish or fail, then destroy it.`);
  }
  updatePov(deps.db, povId, { state: 'destroying', error_message: null }, nowIso(deps));
  const api = await deps.skytap(ctx.signal);
  try {
    // Unwire from BeyondTrust before the agent goes (it stops the Gateway container) and before
    // the environment goes (a Jumpoint left behind would point at nothing). Never blocks the destroy.
    if (deps.teardownPam) {
      ctx.progress('unwire BeyondTrust', 0.03);
      try {
        await deps.teardownPam(povId, ctx);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        ctx.log(`could not unwire BeyondTrust: ${messageOf(err)} The environment is destroyed anyway; remove what is left in the tenants (Access panel → Unwire).`, 'warn');
      }
    }
    // Revoke the agent first: from the moment a destroy is asked for, nothing on that VM should
    // be trusted. A failure is logged on the job and the row and the destroy carries on.
    ctx.progress('revoke control node agent', 0.05);
    await runTeardownHook(deps, povId, ctx);
    if (row.env_id === null && row.create_sent_at !== null) {
      // An interrupted create may have made an environment whose id never reached the row.
      ctx.progress('look for an environment', 0.1);
      const found = await findAdoptable(api, row);
      if (found) {
        updatePov(deps.db, povId, { env_id: found.id }, nowIso(deps));
        ctx.log(`found environment ${found.id} from an interrupted create; destroying it`, 'warn');
        row = mustGet(deps, povId);
      } else if ((deps.now?.() ?? new Date()).getTime() <= checkDeadline(row, deps.createCheckMs).getTime()) {
        // Skytap may still list it: destroying the row now would leave that environment untracked.
        throw new AppError(
          'conflict',
          `The create's outcome is still being checked until ${checkDeadline(row, deps.createCheckMs).toISOString().slice(11, 16)} UTC; ` +
            'POV Desk adopts the environment if it appears. Press Destroy again after that.',
        );
      }
    }
    const envId = row.env_id;
    if (envId !== null) {
      check('before-delete');
      ctx.progress('delete environment', 0.2);
      // Never DELETE a busy environment; a busy one may also be a delete already under way
      // (a re-run after a crash), which ends in 404 rather than in a runstate.
      const current = await waitNotBusyOrGone(deps, api, povId, envId, ctx);
      if (current !== null) {
        const outcome = await api.deleteEnvironment(envId);
        ctx.log(`DELETE answered ${outcome}`);
      } else {
        ctx.log(`environment ${envId} is already gone (404)`);
      }
      check('after-delete');
      // Complete only when GET answers 404.
      ctx.progress('wait until gone', 0.6);
      await waitGone(deps, api, envId, ctx, deps.sleep);
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
          (row.env_id ? `Environment ${row.env_id} may still exist in Skytap and may still be billing; ` : '') +
          'press Destroy again once the cause is cleared.',
      },
      nowIso(deps),
    );
    throw err;
  }
}

async function waitGone(
  deps: LifecycleDeps,
  api: SkytapApi,
  envId: string,
  ctx: StepContext,
  sleep: LifecycleDeps['sleep'],
): Promise<void> {
  const doSleep = sleep ?? abortableSleep;
  const now = deps.now ?? (() => new Date());
  const started = now().getTime();
  const timeoutMs = deps.waitTimeoutMs ?? 30 * 60_000;
  for (;;) {
    const env = await api.getEnvironment(envId);
    if (env === null) return;
    if (now().getTime() - started > timeoutMs) {
      throw new AppError(
        'timeout',
        `Skytap still lists environment ${envId} (${env.runstate}) ${Math.round(timeoutMs / 60000)} min after the delete.`,
      );
    }
    ctx.progress('wait until gone', null, `Skytap still has it (${env.runstate})`);
    await doSleep(deps.pollMs ?? 5000, ctx.signal);
  }
}

/** Polls until the environment is not busy (returned) or answers 404 (null). */
async function waitNotBusyOrGone(
  deps: LifecycleDeps,
  api: SkytapApi,
  povId: string,
  envId: string,
  ctx: StepContext,
): Promise<Environment | null> {
  const doSleep = deps.sleep ?? abortableSleep;
  const now = deps.now ?? (() => new Date());
  const started = now().getTime();
  const timeoutMs = deps.waitTimeoutMs ?? 30 * 60_000;
  for (;;) {
    const env = await api.getEnvironment(envId);
    if (env === null) return null;
    recordReading(deps.db, povId, env, now().toISOString());
    if (env.runstate !== 'busy') return env;
    if (now().getTime() - started > timeoutMs) {
      throw new AppError(
        'timeout',
        `Environment ${envId} stayed busy for ${Math.round(timeoutMs / 60000)} min, so it was not deleted. Check it in Skytap, then press Destroy again.`,
      );
    }
    ctx.progress('wait until not busy', null, 'Skytap says busy');
    await doSleep(deps.pollMs ?? 5000, ctx.signal);
  }
}
