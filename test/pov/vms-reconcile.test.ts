import { afterEach, describe, expect, it } from 'vitest';
import { getPov, listVms } from '../../main/services/pov/repo';
import { reconcilePass } from '../../main/services/pov/reconcile';
import { runRefreshVms } from '../../main/services/pov/lifecycle';
import { clientFor, createPov, world, type World } from './helpers';
import { SEEDS } from '../skytap-emulator/seed';
import { JOB_KIND } from '../../shared/contract/job-kinds';

let w: World;
afterEach(async () => {
  await w?.close();
});

describe('VM reads', () => {
  it('an empty read never prunes; a VM absent from a non-empty read is marked gone, not deleted', async () => {
    w = await world();
    const { povId } = await createPov(w);
    const before = listVms(w.db, povId);
    expect(before).toHaveLength(4);
    // a read that comes back empty (a transient glitch) changes nothing
    w.emu.faults.push({ match: 'GET /v2/configurations/*/vms', status: 200, body: '[]' });
    const empty = await runRefreshVms(w.deps, povId, w.ctx);
    expect(empty.emptyRead).toBe(true);
    expect(listVms(w.db, povId)).toEqual(before);
    expect(w.logs.some((l) => l.startsWith('warn:') && /never prunes/.test(l))).toBe(true);
    // a VM removed in Skytap is marked gone by the next non-empty read
    const env = w.emu.state.environments.get(getPov(w.db, povId)!.env_id!)!;
    const removed = env.vms.splice(
      env.vms.findIndex((v) => v.name === 'rhel-target'),
      1,
    )[0]!;
    const res = await runRefreshVms(w.deps, povId, w.ctx);
    expect(res).toMatchObject({ seen: 3, markedGone: 1, emptyRead: false });
    const after = listVms(w.db, povId);
    expect(after).toHaveLength(4);
    expect(after.find((v) => v.vm_id === removed.id)!.gone_at).not.toBeNull();
    expect(after.filter((v) => v.gone_at === null)).toHaveLength(3);
    // ...and comes back if Skytap lists it again
    env.vms.push(removed);
    await runRefreshVms(w.deps, povId, w.ctx);
    expect(listVms(w.db, povId).every((v) => v.gone_at === null)).toBe(true);
  });

  it("the OS override is kept apart from Skytap's value and survives every refresh", async () => {
    w = await world();
    const { povId } = await createPov(w);
    const appliance = listVms(w.db, povId).find((v) => v.name === 'appliance')!;
    expect(appliance.os_platform).toBe('unknown');
    const vm = w.svc.setVmOs(povId, appliance.vm_id, 'linux');
    expect(vm).toMatchObject({ osPlatform: 'unknown', osOverride: 'linux', os: 'linux' });
    // Skytap changes its guestOS; the platform value follows, the override stays
    const env = w.emu.state.environments.get(getPov(w.db, povId)!.env_id!)!;
    env.vms.find((v) => v.id === appliance.vm_id)!.guestOS = 'windows2019srv-64';
    await w.jobs.wait(w.svc.refreshVms(povId));
    const again = w.svc.get(povId).vms.find((v) => v.vmId === appliance.vm_id)!;
    expect(again).toMatchObject({ osPlatform: 'windows', osOverride: 'linux', os: 'linux', guestOs: 'windows2019srv-64' });
    // clearing the override falls back to the platform value
    expect(w.svc.setVmOs(povId, appliance.vm_id, null)).toMatchObject({ osOverride: null, os: 'windows' });
    expect(() => w.svc.setVmOs(povId, 'no-such-vm', 'linux')).toThrow(expect.objectContaining({ code: 'not_found' }));
  });
});

describe('reconcile sweep', () => {
  it('one collection read covers every managed environment and updates runstate and last confirmed', async () => {
    w = await world();
    const a = await createPov(w, 'A');
    const b = await createPov(w, 'B');
    const c = await createPov(w, 'C');
    const envA = getPov(w.db, a.povId)!.env_id!;
    // suspended behind our back (suspend_on_idle): the sweep must notice
    w.emu.state.environments.get(envA)!.runstate = 'suspended';
    const before = getPov(w.db, b.povId)!.last_confirmed_at!;
    await new Promise((r) => setTimeout(r, 5));
    w.emu.requests.length = 0;
    const res = await reconcilePass(w.db, clientFor(w.emu.url), w.ctx);
    expect(res).toMatchObject({ managed: 3, confirmed: 3, lookedUp: 0, gone: 0 });
    const gets = w.emu.requests.filter((r) => r.method === 'GET');
    expect(gets.map((r) => r.path.replace(/\.json$/, ''))).toEqual(['/v2/configurations']);
    expect(getPov(w.db, a.povId)!.runstate).toBe('suspended');
    expect(getPov(w.db, b.povId)!.last_confirmed_at! > before).toBe(true);
    expect(w.svc.get(a.povId).pov.actions.start).toBe(true);
    void c;
  });

  it('walks every page of a large account in ceil(n/100) reads', async () => {
    w = await world();
    for (let i = 0; i < 250; i++) w.emu.state.addEnvironment({ name: `other-${i}`, runstate: 'running' });
    await createPov(w, 'Mine');
    w.emu.requests.length = 0;
    const res = await reconcilePass(w.db, clientFor(w.emu.url), w.ctx);
    expect(res.confirmed).toBe(1);
    expect(w.emu.requests.filter((r) => r.method === 'GET')).toHaveLength(3);
  });

  it('2,000 managed environments: ceil(2000/100) = 20 requests, every row confirmed', async () => {
    w = await world({ seed: (st) => SEEDS.many(st, 2000) });
    const at = new Date(Date.now() - 3600_000).toISOString();
    const ins = w.db.prepare(
      `INSERT INTO povs (id, name, template_id, template_name, env_name, env_id, state, runstate, created_at, updated_at, last_confirmed_at)
       VALUES (?, ?, '500', 'Bulk template', ?, ?, 'active', 'stopped', ?, ?, ?)`,
    );
    w.db.transaction(() => {
      for (const id of w.emu.state.environments.keys()) ins.run(`p${id}`, `POV ${id}`, `env ${id}`, id, at, at, at);
    })();
    w.emu.requests.length = 0;
    const res = await reconcilePass(w.db, clientFor(w.emu.url), w.ctx);
    expect(res).toMatchObject({ managed: 2000, confirmed: 2000, lookedUp: 0, gone: 0 });
    expect(w.emu.requests).toHaveLength(20);
    const stale = w.db.prepare("SELECT COUNT(*) AS n FROM povs WHERE runstate <> 'running' OR last_confirmed_at = ?").get(at) as {
      n: number;
    };
    expect(stale.n).toBe(0);
  });

  it('an environment missing from the read is looked up once before it is called gone', async () => {
    w = await world();
    const kept = await createPov(w, 'Kept');
    const gone = await createPov(w, 'Gone');
    const goneEnv = getPov(w.db, gone.povId)!.env_id!;
    const keptEnv = getPov(w.db, kept.povId)!.env_id!;
    // Skytap deleted one outside POV Desk
    w.emu.state.environments.delete(goneEnv);
    // and the listing misses the other one too (e.g. outside the project scope) although it exists
    w.emu.faults.push({ match: 'GET /v2/configurations', status: 200, body: '[]' });
    w.emu.requests.length = 0;
    const res = await reconcilePass(w.db, clientFor(w.emu.url), w.ctx);
    expect(res).toMatchObject({ managed: 2, lookedUp: 2, gone: 1, confirmed: 1 });
    const single = w.emu.requests.filter((r) => r.method === 'GET' && /^\/v2\/configurations\/\d+/.test(r.path));
    expect(single.map((r) => r.path.replace(/\.json$/, '')).sort()).toEqual(
      [`/v2/configurations/${goneEnv}`, `/v2/configurations/${keptEnv}`].sort(),
    );
    expect(getPov(w.db, kept.povId)!.state).toBe('active');
    const g = getPov(w.db, gone.povId)!;
    expect(g.state).toBe('destroyed');
    expect(g.error_message).toMatch(/deleted outside POV Desk/);
    // no row claims destroyed while Skytap still has it
    expect(w.emu.state.environmentIds()).toEqual([keptEnv]);
  });

  it('a failed listing changes no row and fails the pass with the reason', async () => {
    w = await world();
    const { povId } = await createPov(w);
    const before = getPov(w.db, povId)!;
    w.emu.faults.push({ match: 'GET /v2/configurations', status: 500, times: 10 });
    const job = await w.jobs.wait(w.svc.runReconcile());
    expect(job.state).toBe('failed');
    expect(job.error!.message).toMatch(/server error \(500/);
    const after = getPov(w.db, povId)!;
    expect(after.last_confirmed_at).toBe(before.last_confirmed_at);
    expect(after.state).toBe('active');
  });

  it('runs as a routine reconcile.runNow job, hidden unless includeRoutine, pruned on retention', async () => {
    w = await world();
    await createPov(w, 'A');
    const id1 = w.svc.runReconcile();
    expect(w.svc.runReconcile()).toBe(id1); // a pass in flight is reused, not doubled
    const job = await w.jobs.wait(id1);
    expect(job).toMatchObject({ kind: JOB_KIND.reconcile, routine: true, state: 'succeeded' });
    expect(job.result).toMatchObject({ managed: 1, confirmed: 1 });
    expect(w.jobs.list().some((j) => j.id === id1)).toBe(false);
    expect(w.jobs.list({ includeRoutine: true }).some((j) => j.id === id1)).toBe(true);
    // pruning: an old routine job goes, user jobs stay
    w.db.prepare("UPDATE jobs SET created_at = '2000-01-01T00:00:00.000Z' WHERE id = ?").run(id1);
    const userJobs = w.jobs.list().length;
    expect(w.jobs.pruneRoutine(24 * 3600_000)).toBe(1);
    expect(w.jobs.get(id1)).toBeNull();
    expect(w.jobs.list()).toHaveLength(userJobs);
  });

  it('the ten-minute timer starts a pass only when there is something to confirm', async () => {
    w = await world();
    const stop1 = w.svc.startSweeps({ intervalMs: 40, firstDelayMs: 1 });
    await new Promise((r) => setTimeout(r, 120));
    stop1();
    expect(w.jobs.list({ includeRoutine: true }).filter((j) => j.kind === JOB_KIND.reconcile)).toHaveLength(0);
    await createPov(w, 'A');
    const stop2 = w.svc.startSweeps({ intervalMs: 40, firstDelayMs: 1 });
    await new Promise((r) => setTimeout(r, 150));
    stop2();
    const passes = w.jobs.list({ includeRoutine: true }).filter((j) => j.kind === JOB_KIND.reconcile);
    expect(passes.length).toBeGreaterThanOrEqual(1);
    for (const p of passes) await w.jobs.wait(p.id);
  });
});
