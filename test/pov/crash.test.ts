import { afterEach, describe, expect, it } from 'vitest';
import { CREATE_STEPS, DESTROY_STEPS } from '../../main/services/pov/types';
import { getPov, listPovs } from '../../main/services/pov/repo';
import { createPov, firstTemplateId, runCrashChild, world, type World } from './helpers';

/**
 * Crash injection (the child runs under `node --import tsx`, so the SIGKILL hits the process
 * doing the work, not a wrapper): a child process runs create or destroy against the emulator and SIGKILLs
 * itself at each step; then the app "restarts" (JobRunner.markInterrupted + resumeInterrupted
 * on the same SQLite file) and re-runs. After every case: no environment exists in the emulator
 * that the database does not know, and no row claims destroyed while the emulator still has it.
 */

let w: World;
afterEach(async () => {
  await w?.close();
});

function invariants(w: World) {
  const rows = listPovs(w.db, true);
  const known = new Set(rows.map((r) => r.env_id).filter(Boolean));
  const live = w.emu.state.environmentIds();
  const unknown = live.filter((id) => !known.has(id));
  expect(unknown, 'environments in Skytap the database does not know').toEqual([]);
  const liesDestroyed = rows.filter((r) => r.state === 'destroyed' && r.env_id && live.includes(r.env_id));
  expect(liesDestroyed, 'rows claiming destroyed while Skytap still has them').toEqual([]);
}

async function restart(w: World, killedJob?: string) {
  w.jobs.markInterrupted();
  if (killedJob) expect(w.jobs.get(killedJob)!.state).toBe('interrupted');
  const ids = w.svc.resumeInterrupted();
  for (const id of ids) await w.jobs.wait(id);
  return ids;
}

describe('crash injection (SIGKILL at every step, restart, re-run)', () => {
  for (const step of CREATE_STEPS) {
    it(`create killed at ${step}`, async () => {
      w = await world();
      const r = await runCrashChild({
        CRASH_DB: w.file,
        CRASH_EMU: w.emu.url,
        CRASH_OP: 'create',
        CRASH_AT: step,
        CRASH_TEMPLATE: firstTemplateId(w),
      });
      expect(r.signal, r.err).toBe('SIGKILL');
      expect(r.out).toContain(`crash ${step}`);
      const povId = /pov (\S+)/.exec(r.out)![1]!;
      invariantsAfterCrash(w, povId, step);
      const resumed = await restart(w, /job (\S+)/.exec(r.out)![1]!);
      expect(resumed).toHaveLength(1);
      const row = getPov(w.db, povId)!;
      expect(row.state, row.error_message ?? '').toBe('active');
      expect(w.emu.count('POST /configurations')).toBe(1); // adopted, never created twice
      invariants(w);
      // and it can be destroyed cleanly
      await w.jobs.wait(w.svc.destroy(povId));
      expect(getPov(w.db, povId)!.state).toBe('destroyed');
      expect(w.emu.state.environmentIds()).toEqual([]);
      invariants(w);
    });
  }

  for (const step of DESTROY_STEPS) {
    it(`destroy killed at ${step}`, async () => {
      w = await world();
      const { povId } = await createPov(w);
      const r = await runCrashChild({ CRASH_DB: w.file, CRASH_EMU: w.emu.url, CRASH_OP: 'destroy', CRASH_AT: step, CRASH_POV: povId });
      expect(r.signal, r.err).toBe('SIGKILL');
      expect(getPov(w.db, povId)!.state).toBe('destroying');
      invariants(w);
      await restart(w, /job (\S+)/.exec(r.out)![1]!);
      expect(getPov(w.db, povId)!.state).toBe('destroyed');
      expect(w.emu.state.environmentIds()).toEqual([]);
      invariants(w);
    });
  }

  it('a create killed after POST but before the commit is adopted even by Destroy', async () => {
    w = await world();
    const r = await runCrashChild({
      CRASH_DB: w.file,
      CRASH_EMU: w.emu.url,
      CRASH_OP: 'create',
      CRASH_AT: 'after-create',
      CRASH_TEMPLATE: firstTemplateId(w),
    });
    const povId = /pov (\S+)/.exec(r.out)![1]!;
    expect(getPov(w.db, povId)!.env_id).toBeNull();
    expect(w.emu.state.environmentIds()).toHaveLength(1);
    // the user destroys the stuck row instead of resuming it: the environment is found and deleted
    w.db.prepare("UPDATE povs SET state = 'failed' WHERE id = ?").run(povId);
    const job = await w.jobs.wait(w.svc.destroy(povId));
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    expect(w.emu.state.environmentIds()).toEqual([]);
    invariants(w);
  });
});

function invariantsAfterCrash(w: World, povId: string, step: string) {
  const row = getPov(w.db, povId)!;
  expect(row.state).toBe('provisioning');
  // after the commit step the id is on the row; before it, at most the tagged environment exists
  if (CREATE_STEPS.indexOf(step as (typeof CREATE_STEPS)[number]) >= CREATE_STEPS.indexOf('after-commit')) {
    expect(row.env_id).not.toBeNull();
    invariants(w);
  } else {
    const live = w.emu.state.environmentIds();
    expect(live.length).toBeLessThanOrEqual(1);
    for (const id of live) expect(w.emu.state.environments.get(id)!.name).toBe(row.env_name);
  }
}
