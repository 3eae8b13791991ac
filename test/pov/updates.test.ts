import { afterEach, describe, expect, it } from 'vitest';
import { getPov } from '../../main/services/pov/repo';
import { PovUpdates } from '../../main/services/pov/updates';
import { firstTemplateId, followPovUpdates, world, type World } from './helpers';

let w: World;
afterEach(async () => {
  await w?.close();
});

/** Checks publish after their (async) badge step: let them land. */
const settle = () => new Promise((r) => setTimeout(r, 20));

/** pov.updated: what the POV list follows instead of re-reading when jobs settle. */
describe('pov.updated', () => {
  it('follows a create to its confirmed runstate and ends with the row free; a sweep publishes only what changed', async () => {
    w = await world();
    const seen = followPovUpdates(w.hub);
    const svc = w.svc;
    new PovUpdates(w.hub, (id) => svc.views(id));
    const { jobId, povId } = svc.create({ templateId: firstTemplateId(w), name: 'Evented' });
    await w.jobs.wait(jobId);
    await settle();
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.every((p) => p.id === povId)).toBe(true);
    expect(seen[0]).toMatchObject({ name: 'Evented', state: 'provisioning' });
    expect(seen.some((p) => p.activeJobId === jobId)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ state: 'active', runstate: 'running', activeJobId: null });
    // no two events in a row say the same
    for (let i = 1; i < seen.length; i++) expect(JSON.stringify(seen[i])).not.toBe(JSON.stringify(seen[i - 1]));

    // someone suspends the environment in Skytap: the sweep's pass publishes the row once
    w.emu.state.environments.get(getPov(w.db, povId)!.env_id!)!.runstate = 'suspended';
    seen.length = 0;
    await w.jobs.wait(svc.runReconcile());
    await settle();
    expect(seen.map((p) => p.runstate)).toEqual(['suspended']);
    seen.length = 0;
    await w.jobs.wait(svc.runReconcile());
    await settle();
    expect(seen.filter((p) => p.runstate !== 'suspended')).toEqual([]);
  });
});
