import { AppError } from '../../../shared/contract/errors';
import { runPower } from './lifecycle';
import { updatePov } from './repo';
import { mustGet, nowIso, platformOf } from './steps';
import type { LifecycleDeps, StepContext } from './types';

/**
 * A local POV's clean state (issue 34): "Save clean state" keeps every VM's disk, vTPM state and
 * firmware variables and, of a VM that is ready, its memory too (the vm-manager resumes it from
 * that save at once); "Reset to clean state" puts them back and resumes each VM's saved memory, so
 * the POV is ready again in seconds, each VM after a fresh verified quote. A VM saved while
 * stopped (or whose memory could not be saved) is left stopped by the reset and booted from its
 * saved disks by the power step; the VM's record says which (vm-manager clean-state.ts).
 */
async function onEnvironment(
  deps: LifecycleDeps,
  povId: string,
  ctx: StepContext,
  what: string,
  body: (envId: string) => Promise<void>,
  startAfter: (wasRunning: boolean) => boolean,
) {
  const row = mustGet(deps, povId);
  if (row.platform !== 'local')
    throw new AppError('unsupported', `${what} is for POVs on this laptop; a Skytap environment keeps its own snapshots in Skytap.`);
  if (!row.env_id) throw new AppError('conflict', `POV "${row.name}" has no VMs yet.`);
  const p = await platformOf(deps, row, ctx.signal);
  const env = await p.get(row.env_id);
  if (!env || env.vms.length === 0) throw new AppError('not_found', `The vm-manager has no VM of ${row.env_id}.`);
  if (env.runstate === 'busy')
    throw new AppError('conflict', `POV "${row.name}" has VMs starting or stopping; ${what} once they are ready or stopped.`);
  const wasRunning = env.runstate === 'running';
  ctx.progress(what, 0.3);
  await body(row.env_id);
  // VMs the manager resumed come up by themselves; stopped ones are started (a boot of the saved disks).
  if (startAfter(wasRunning)) await runPower(deps, povId, 'running', ctx);
  ctx.progress('done', 1);
}

export async function runSnapshot(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<{ at: string }> {
  let at = '';
  await onEnvironment(
    deps,
    povId,
    ctx,
    'save clean state',
    async (envId) => {
      const p = await platformOf(deps, mustGet(deps, povId), ctx.signal);
      if (!p.saveClean) throw new AppError('unsupported', 'this lab platform cannot save a clean state');
      await p.saveClean(envId);
      at = nowIso(deps);
      updatePov(deps.db, povId, { clean_snapshot_at: at }, at);
      ctx.log(`clean state saved at ${at}`);
    },
    (wasRunning) => wasRunning,
  );
  return { at };
}

export async function runReset(deps: LifecycleDeps, povId: string, ctx: StepContext): Promise<{ cleanAt: string }> {
  const row = mustGet(deps, povId);
  if (!row.clean_snapshot_at) throw new AppError('conflict', `POV "${row.name}" has no clean state yet: press Save clean state first.`);
  await onEnvironment(
    deps,
    povId,
    ctx,
    'reset to clean state',
    async (envId) => {
      const p = await platformOf(deps, mustGet(deps, povId), ctx.signal);
      if (!p.resetClean) throw new AppError('unsupported', 'this lab platform cannot reset to a clean state');
      await p.resetClean(envId);
      ctx.log(
        `every VM put back to its clean state of ${row.clean_snapshot_at}: resumed from its saved memory, or booted from its ` +
          `saved disks where none was saved (its record's lastReset says why)`,
      );
    },
    () => true,
  );
  return { cleanAt: row.clean_snapshot_at };
}
