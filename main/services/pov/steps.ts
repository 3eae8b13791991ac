import { AppError, toWireError } from '../../../shared/contract/errors';
import type { LabPlatform } from '../lab-platforms/platform';
import { SkytapPlatform } from '../lab-platforms/skytap';
import { getPov, updatePov, type PovRow } from './repo';
import type { LifecycleDeps, StepContext } from './types';

/** What every step of the POV lifecycle (lifecycle.ts, destroy.ts, the sweep) shares. */

export function nowIso(deps: Pick<LifecycleDeps, 'now'>): string {
  return (deps.now?.() ?? new Date()).toISOString();
}

export function mustGet(deps: LifecycleDeps, id: string): PovRow {
  const row = getPov(deps.db, id);
  if (!row) throw new AppError('not_found', `No POV ${id}; refresh the POV list.`);
  return row;
}

export function messageOf(err: unknown): string {
  return toWireError(err).message;
}

/** The lab platform a POV row lives on: Skytap through a client built now, Local as wired. */
export async function platformOf(deps: LifecycleDeps, row: Pick<PovRow, 'platform'>, signal: AbortSignal): Promise<LabPlatform> {
  if (row.platform === 'skytap') return new SkytapPlatform(await deps.skytap(signal));
  if (row.platform === 'local' && deps.local) return deps.local;
  throw new AppError('unsupported', `No lab platform "${row.platform}" is wired in this process.`);
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
  ctx.progress('install control node', 0.92);
  const before = mustGet(deps, povId);
  try {
    return (await deps.controlNode.installAfterPowerOn(povId, ctx)) === 'not_set_up' ? 'skipped' : 'installed';
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
  try {
    await deps.controlNode.teardown(povId, ctx);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const reason =
      `could not revoke the control node's agent: ${messageOf(err)} ` +
      'The environment is destroyed anyway; revoke the agent in the control plane.';
    ctx.log(reason, 'warn');
    updatePov(deps.db, povId, { control_node_reason: reason }, nowIso(deps));
  }
}
