import { afterEach, describe, expect, it } from 'vitest';
import { getPov } from '../../main/services/pov/repo';
import { PovService } from '../../main/services/pov/service';
import { createPov, firstTemplateId, world, type World } from '../pov/helpers';

/**
 * A create whose answer is lost (issue 9): the emulator makes the environment, answers 504 and
 * leaves it out of listings for a while. The row must never say "nothing is billing" while the
 * environment may exist; the reconcile sweep adopts it when it appears and finishes the create.
 */
let w: World;
afterEach(async () => {
  await w?.close();
});

describe('unclear create', () => {
  it('504 after the environment was made, hidden from listings for 5 s: checked, then adopted by the sweep', async () => {
    w = await world();
    w.emu.faults.push({ match: 'POST /configurations', status: 504, afterHandling: true, hideMs: 5000 });
    const { povId, job } = await createPov(w);
    expect(job.state).toBe('failed');
    const row = getPov(w.db, povId)!;
    expect(row.state).toBe('failed');
    expect(row.env_id).toBeNull();
    expect(row.error_message).toMatch(/may exist — being checked/);
    expect(row.error_message).not.toMatch(/nothing is billing/);
    expect(w.emu.state.environmentIds()).toHaveLength(1); // it IS billing, unknown to the row yet

    // Destroy now would lose track of it: refused while the check runs.
    const d = await w.jobs.wait(w.svc.destroy(povId));
    expect(d.state).toBe('failed');
    expect(d.error?.message).toMatch(/still being checked/);
    expect(getPov(w.db, povId)!.error_message).not.toMatch(/nothing is billing/);

    // A sweep while it is still hidden changes nothing.
    const early = await w.jobs.wait(w.svc.runReconcile());
    expect(early.result).toMatchObject({ unclearChecked: 1, adopted: [] });
    expect(getPov(w.db, povId)!.env_id).toBeNull();

    await new Promise((r) => setTimeout(r, 5200));
    const pass = await w.jobs.wait(w.svc.runReconcile());
    expect(pass.result).toMatchObject({ unclearChecked: 1, adopted: [povId] });
    const finishing = w.svc.activeJob(povId);
    expect(finishing).not.toBeNull();
    expect((await w.jobs.wait(finishing!)).state).toBe('succeeded');
    const done = getPov(w.db, povId)!;
    expect(done.state).toBe('active');
    expect(done.env_id).toBe(w.emu.state.environmentIds()[0]);
    expect(w.emu.count('POST /configurations')).toBe(1);
  }, 60_000);

  it('nothing appears within the bound: only then does the row say nothing is billing', async () => {
    w = await world();
    const svc = new PovService({ ...w.deps, jobs: w.jobs, hub: w.hub, createCheckMs: 1500 });
    // The create is refused after reaching nothing, but the reply is lost: outcome unknown.
    w.emu.faults.push({ match: 'POST /configurations', status: 504 });
    const { jobId, povId } = svc.create({ templateId: firstTemplateId(w), name: 'Lost' });
    expect((await w.jobs.wait(jobId)).state).toBe('failed');
    expect(getPov(w.db, povId)!.error_message).toMatch(/may exist — being checked/);
    await w.jobs.wait(svc.runReconcile());
    expect(getPov(w.db, povId)!.error_message).toMatch(/being checked/);
    await new Promise((r) => setTimeout(r, 1600));
    const pass = await w.jobs.wait(svc.runReconcile());
    expect(pass.result).toMatchObject({ unclearChecked: 1, adopted: [] });
    const row = getPov(w.db, povId)!;
    expect(row.error_message).toMatch(/nothing from this POV is billing/);
    expect(row.create_sent_at).toBeNull();
    // and now Destroy removes the row without looking further
    expect((await w.jobs.wait(svc.destroy(povId))).state).toBe('succeeded');
    expect(w.emu.count('POST /configurations')).toBe(1);
  }, 60_000);

  it('a definite refusal (422) says nothing is billing at once', async () => {
    w = await world();
    w.emu.faults.push({ match: 'POST /configurations', status: 422, message: 'Quota exceeded' });
    const { povId } = await createPov(w);
    const row = getPov(w.db, povId)!;
    expect(row.error_message).toMatch(/nothing is billing/);
    expect(row.create_sent_at).toBeNull();
  });
});
