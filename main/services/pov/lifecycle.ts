import { AppError } from '../../../shared/contract/errors';
import { capabilitiesOf } from '../../../shared/lab-platforms';
import { povTag, type LabEnvironment, type LabPlatform } from '../lab-platforms/platform';
import { wordsOf } from '../lab-platforms/words';
import { updatePov } from './repo';
import { mustGet, messageOf, nowIso, platformOf, runControlNodeHook } from './steps';
import type { LifecycleDeps, StepContext } from './types';
import { applyLabVms, type VmApplyResult } from './vms';
import { pollEnvironment, recordReading } from './wait';
import { findAdoptable, isMaybeCreated, markCreateUnclear } from './unclear-create';

/**
 * The POV lifecycle, one for every lab platform (LabPlatform: Skytap and Local). Every function
 * here can be run again after any failure or crash and picks up from what the database and the
 * platform say, never from memory. Where the environment id comes from decides the create's order:
 *
 * assigned on create (Skytap, envIdFor null):
 *          row (provisioning) → [before-create] → POST → [after-create] → env id COMMITTED →
 *          [after-commit] → …
 * named first (Local, envIdFor gives it):
 *          row (provisioning) → env id + create_sent_at COMMITTED → [after-commit] → create (per
 *          VM [before-create-vm:<vm>] … [after-create-vm:<vm>]; one that exists is kept) →
 *          [after-create] → …
 * then:    wait not busy → [after-wait] → power on + wait → [after-power-on] → read VMs →
 *          [after-vms] → active → control-node hook (cannot fail the provision).
 * destroy: destroy.ts.
 *
 * Skytap's window between the POST returning and the commit cannot be closed, so the POST carries
 * the row's tag in the environment name (env_name) and a re-run first looks for an environment
 * with that name: an interrupted create adopts its environment instead of leaving an orphan, and a
 * create whose answer was lost is never re-sent (unclear-create.ts).
 */

export interface CreateResult {
  envId: string;
  vms: VmApplyResult | null;
  /** installed: the install job started; skipped: no installer here, or Settings → Control node incomplete. */
  controlNode: 'installed' | 'failed' | 'skipped';
  adopted: boolean;
}

/**
 * Gets the row its environment id when the platform assigns it on create (Skytap): adopt first,
 * send the create at most once, commit the id before anything else can fail.
 */
async function createAssigned(deps: LifecycleDeps, p: LabPlatform, povId: string, ctx: StepContext): Promise<{ adopted: boolean }> {
  const check = deps.checkpoint ?? (() => {});
  const w = wordsOf(p.id);
  const row = mustGet(deps, povId);
  let adopted = false;
  // Only a row whose POST may already have been sent needs the (paginated) adoption lookup.
  let found: LabEnvironment | null = null;
  if (row.create_sent_at !== null) {
    ctx.progress('create environment', 0.05, 'Looking for the environment an earlier attempt created');
    found = await findAdoptable(p, row);
  }
  if (row.create_sent_at !== null && !found) {
    // An earlier POST may still make it (this process or one before it died with it in flight):
    // never send a second create; the sweep keeps looking (unclear-create.ts).
    throw markCreateUnclear(
      deps.db,
      row,
      'An earlier attempt sent the create and its outcome is unknown.',
      nowIso(deps),
      deps.createCheckMs,
    );
  }
  check('before-create');
  let env: LabEnvironment;
  if (found) {
    env = found;
    adopted = true;
    ctx.log(`adopting environment ${found.id} created by an interrupted attempt`, 'warn');
  } else {
    ctx.progress('create environment', 0.1, w.createRequest(row.template_id));
    updatePov(deps.db, povId, { create_sent_at: nowIso(deps) }, nowIso(deps));
    try {
      env = await p.create({ envId: null, templateId: row.template_id, name: row.env_name });
    } catch (err) {
      // The create is never re-sent; but it may have reached the platform, so look once before failing.
      const maybe = await findAdoptable(p, row).catch(() => null);
      // Lost answers and a cancel while the POST was out both leave the outcome unknown.
      if (!maybe && (isMaybeCreated(err) || ctx.signal.aborted)) {
        throw markCreateUnclear(
          deps.db,
          mustGet(deps, povId),
          `${w.name}'s answer to the create was lost: ${messageOf(err)}`,
          nowIso(deps),
          deps.createCheckMs,
        );
      }
      if (!maybe) {
        // The platform refused the create outright, so it made nothing.
        updatePov(
          deps.db,
          povId,
          {
            state: 'failed',
            create_sent_at: null,
            error_message:
              `${w.name} did not create the environment: ${messageOf(err)} No environment was found under this POV's name, so ` +
              `nothing is billing; press Destroy to remove this row.`,
          },
          nowIso(deps),
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
  updatePov(deps.db, povId, { env_id: env.id, runstate: env.runstate, rate_limited: env.rateLimited ? 1 : 0, last_confirmed_at: at }, at);
  check('after-commit');
  ctx.log(`environment ${env.id} recorded`);
  return { adopted };
}

export async function runCreate(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<CreateResult> {
  const check = deps.checkpoint ?? (() => {});
  let row = mustGet(deps, povId);
  if (row.state !== 'provisioning') {
    throw new AppError('conflict', `POV "${row.name}" is ${row.state}, not provisioning; nothing to create.`);
  }
  const p = await platformOf(deps, row, ctx.signal);
  const w = wordsOf(p.id);
  let adopted = false;

  // Step 0: the template must be there (and gives the row its template name).
  if (row.env_id === null && row.template_name === '') {
    ctx.progress('check template', 0.02);
    const name = await p.templateName(row.template_id);
    if (name === null) {
      const why = w.noTemplate(row.template_id);
      updatePov(deps.db, povId, { state: 'failed', error_message: why.row }, nowIso(deps));
      throw new AppError('not_found', why.error);
    }
    updatePov(deps.db, povId, { template_name: name }, nowIso(deps));
    row = mustGet(deps, povId);
  }

  // Step 1: the environment id, committed before anything else can fail.
  const named = p.envIdFor(povTag(povId));
  if (row.env_id === null && named !== null) {
    // Named before it exists: every VM made after this commit is found by its name.
    const at = nowIso(deps);
    updatePov(deps.db, povId, { env_id: named, create_sent_at: at }, at);
    check('after-commit');
  } else if (row.env_id === null) {
    adopted = (await createAssigned(deps, p, povId, ctx)).adopted;
  }
  row = mustGet(deps, povId);
  const envId = row.env_id!;
  if (!row.schedule_id && capabilitiesOf(p.id).features.schedules.supported) {
    ctx.progress('arm auto-delete', 0.25);
    try {
      await deps.autoDelete.arm(povId, ctx);
    } catch (err) {
      ctx.log(`auto-delete is not armed: ${messageOf(err)} The sweep flags it; press Re-arm on the POV.`, 'warn');
    }
  }

  try {
    if (named !== null) {
      // Every run makes what is missing (a re-run after a crash completes, never duplicates).
      ctx.progress('create VMs', 0.1, `from template ${row.template_name}`);
      const made = await p.create({ envId, templateId: row.template_id, name: row.env_name, internet: row.internet_access === 1 }, (s) =>
        check(s),
      );
      recordReading(deps.db, povId, made, nowIso(deps));
      ctx.log(`environment ${envId}: ${made.vms.map((v) => v.name).join(', ')}`);
      check('after-create');
    }
    ctx.progress('wait until not busy', 0.3);
    const settled = await pollEnvironment(deps, p, povId, envId, ctx, 'not busy', (e) => e.runstate !== 'busy');
    if (settled.runstate === 'failed') throw failedToBoot(envId, await p.get(envId));
    check('after-wait');

    const target = p.poweredRunstate('running');
    ctx.progress('power on', 0.5, w.powerRequest('running'));
    if (settled.runstate !== target) {
      if (settled.rateLimited) {
        ctx.log(`a power operation is already queued by ${w.name} (rate_limited); not re-submitting`, 'warn');
      } else {
        const env = await p.power(envId, 'running');
        if (env) recordReading(deps.db, povId, env, nowIso(deps));
      }
      const up = await pollEnvironment(deps, p, povId, envId, ctx, target, (e) => e.runstate === target || e.runstate === 'failed');
      if (up.runstate === 'failed') throw failedToBoot(envId, await p.get(envId));
    }
    check('after-power-on');

    ctx.progress('read VMs', 0.8);
    const applied = applyLabVms(deps.db, povId, await p.vms(envId), nowIso(deps));
    if (applied.emptyRead) ctx.log(`${w.noVms}; kept the VM rows as they were`, 'warn');
    check('after-vms');

    updatePov(deps.db, povId, { state: 'active', error_message: null }, nowIso(deps));
    ctx.progress('active', 0.9);

    const controlNode = await runControlNodeHook(deps, povId, ctx);
    ctx.progress('done', 1);
    return { envId, vms: applied, controlNode, adopted };
  } catch (err) {
    updatePov(
      deps.db,
      povId,
      { state: 'failed', error_message: `Provisioning stopped: ${messageOf(err)} ${w.keptAfterFailure(envId)}` },
      nowIso(deps),
    );
    throw err;
  }
}

/** A VM failed (Local): the create does not restart it; its console says why. */
function failedToBoot(envId: string, env: { vms: { name: string; runstate: string | null }[] } | null): AppError {
  const names = (env?.vms ?? []).filter((v) => v.runstate === 'failed').map((v) => v.name);
  return new AppError('unavailable', `a VM of ${envId} failed to boot (${names.join(', ')}); see its console on the POV's VMs tab`);
}

export async function runPower(
  deps: LifecycleDeps,
  povId: string,
  target: 'running' | 'suspended',
  ctx: StepContext,
): Promise<{ runstate: string }> {
  const row = mustGet(deps, povId);
  const w = wordsOf(row.platform);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no ${w.envNoun}.`);
  const p = await platformOf(deps, row, ctx.signal);
  const want = p.poweredRunstate(target);
  const verb = target === 'running' ? 'start' : 'suspend';
  // Read first: never mutate a busy environment (Skytap's best practice; a local VM in
  // transition likewise), and never re-submit an operation the platform has queued (rate_limited).
  ctx.progress(verb, 0.1, 'reading the environment');
  let env = await pollEnvironment(deps, p, povId, row.env_id, ctx, 'not busy', (e) => e.runstate !== 'busy' || e.rateLimited === true);
  if (env.runstate !== want && !env.rateLimited) {
    ctx.progress(verb, 0.3, w.powerRequest(target));
    const answer = await p.power(row.env_id, target);
    if (answer) recordReading(deps.db, povId, answer, nowIso(deps));
  } else if (env.rateLimited) {
    ctx.log(`${w.name} already has a queued power operation (rate_limited); polling instead of re-submitting`, 'warn');
  }
  env = await pollEnvironment(deps, p, povId, row.env_id, ctx, want, (e) => e.runstate === want);
  ctx.progress('done', 1, `environment is ${env.runstate}`);
  return { runstate: env.runstate };
}

export async function runRefreshVms(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<VmApplyResult> {
  const row = mustGet(deps, povId);
  const w = wordsOf(row.platform);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no ${w.envNoun}, so it has no VMs.`);
  const p = await platformOf(deps, row, ctx.signal);
  ctx.progress('read VMs', 0.2);
  const res = applyLabVms(deps.db, povId, await p.vms(row.env_id), nowIso(deps));
  if (res.emptyRead) ctx.log(`${w.noVms}; kept the VM rows as they were (an empty read never prunes)`, 'warn');
  ctx.progress('done', 1, `${res.seen} VM(s), ${res.markedGone} marked gone`);
  return res;
}
