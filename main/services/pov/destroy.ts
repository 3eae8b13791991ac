import { AppError } from '../../../shared/contract/errors';
import { wordsOf } from '../lab-platforms/words';
import { updatePov } from './repo';
import { mustGet, messageOf, nowIso, platformOf, runTeardownHook } from './steps';
import type { LifecycleDeps, StepContext } from './types';
import { markAllVmsGone } from './vms';
import { waitGone, waitNotBusyOrGone } from './wait';
import { checkDeadline, findAdoptable } from './unclear-create';

/**
 * The POV destroy, one for every lab platform; it can be run again after any failure or crash:
 *
 * → destroying → unwire BeyondTrust, revoke the agent (never blocking) → [before-delete] → wait
 * not busy (never delete a busy environment) → delete (Local: per VM [before-delete-vm:<vm>] …
 * [after-delete-vm:<vm>]) → [after-delete] → poll until the platform no longer has it (Skytap:
 * GET answers 404) → [after-gone] → destroyed. A failure leaves the row `failed`, never `destroyed`.
 */
export async function runDestroy(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<{ envId: string | null }> {
  const check = deps.checkpoint ?? (() => {});
  let row = mustGet(deps, povId);
  if (row.state === 'destroyed') return { envId: row.env_id };
  if (row.state === 'provisioning') {
    throw new AppError('conflict', `POV "${row.name}" is still provisioning; wait for it to finish or fail, then destroy it.`);
  }
  updatePov(deps.db, povId, { state: 'destroying', error_message: null }, nowIso(deps));
  const p = await platformOf(deps, row, ctx.signal);
  const w = wordsOf(p.id);
  try {
    // Unwire from BeyondTrust before the agent goes (it stops the Gateway container) and before
    // the environment goes (a Jumpoint left behind would point at nothing). Never blocks the destroy.
    ctx.progress('unwire BeyondTrust', 0.03);
    try {
      await deps.pam.teardown(povId, ctx);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      ctx.log(
        `could not unwire BeyondTrust: ${messageOf(err)} The environment is destroyed anyway; remove what is left in the tenants ` +
          `(Access panel → Unwire).`,
        'warn',
      );
    }
    // Revoke the agent first: from the moment a destroy is asked for, nothing on that VM should
    // be trusted. A failure is logged on the job and the row and the destroy carries on.
    ctx.progress('revoke control node agent', 0.05);
    await runTeardownHook(deps, povId, ctx);
    if (row.env_id === null && row.create_sent_at !== null) {
      // An interrupted create may have made an environment whose id never reached the row
      // (a platform that assigns ids on create: Skytap).
      ctx.progress('look for an environment', 0.1);
      const found = await findAdoptable(p, row);
      if (found) {
        updatePov(deps.db, povId, { env_id: found.id }, nowIso(deps));
        ctx.log(`found environment ${found.id} from an interrupted create; destroying it`, 'warn');
        row = mustGet(deps, povId);
      } else if ((deps.now?.() ?? new Date()).getTime() <= checkDeadline(row, deps.createCheckMs).getTime()) {
        // The platform may still list it: destroying the row now would leave that environment untracked.
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
      // Never delete a busy environment; a busy one may also be a delete already under way
      // (a re-run after a crash), which ends in gone rather than in a runstate.
      const current = await waitNotBusyOrGone(deps, p, povId, envId, ctx);
      if (current !== null) {
        const outcome = await p.delete(envId, (s) => check(s));
        ctx.log(`DELETE answered ${outcome}`);
      } else {
        ctx.log(`environment ${envId} is already gone (${w.goneSign})`);
      }
      check('after-delete');
      // Complete only when the platform no longer has it (Skytap: GET answers 404).
      ctx.progress('wait until gone', 0.6);
      await waitGone(deps, p, envId, ctx);
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
          (row.env_id ? `${w.mayRemain(row.env_id)}; ` : '') +
          'press Destroy again once the cause is cleared.',
      },
      nowIso(deps),
    );
    throw err;
  }
}
