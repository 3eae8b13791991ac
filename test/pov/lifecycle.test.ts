import { afterEach, describe, expect, it } from 'vitest';
import { getPov, listVms } from '../../main/services/pov/repo';
import { runDestroy } from '../../main/services/pov/destroy';
import { runCreate } from '../../main/services/pov/lifecycle';
import { insertPov } from '../../main/services/pov/repo';
import { envNameFor } from '../../main/services/pov/service';
import { createPov, firstTemplateId, world, type World } from './helpers';

let w: World;
afterEach(async () => {
  await w?.close();
});

function newRow(w: World, name = 'Row POV', templateId = firstTemplateId(w)): string {
  const id = `pov-${Math.random().toString(16).slice(2)}`;
  insertPov(w.db, { id, name, templateId, templateName: '', envName: envNameFor(name, id), at: new Date().toISOString() });
  return id;
}

describe('create', () => {
  it('creates, waits until not busy, powers on, reads the VMs and ends active', async () => {
    w = await world();
    const { povId, job } = await createPov(w);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const row = getPov(w.db, povId)!;
    expect(row.state).toBe('active');
    expect(row.runstate).toBe('running');
    expect(row.template_name).toBe('PAM POV – Linux + Windows');
    expect(row.last_confirmed_at).not.toBeNull();
    expect(w.emu.state.environmentIds()).toEqual([row.env_id]);
    expect(w.emu.state.environments.get(row.env_id!)!.name).toBe(row.env_name);
    expect(w.emu.count('POST /configurations')).toBe(1);
    // a first attempt needs no adoption lookup (no paginated environment listing)
    expect(w.emu.count('GET /v2/configurations')).toBe(0);
    const puts = w.emu.requests.filter((r) => r.method === 'PUT');
    expect(puts.map((r) => r.body)).toEqual([{ runstate: 'running' }]);
    // every read carried keep_idle (the client's job, checked here end to end)
    expect(w.emu.requests.filter((r) => r.method === 'GET').every((r) => r.query.keep_idle === 'true')).toBe(true);
    const vms = listVms(w.db, povId);
    expect(vms.map((v) => [v.name, v.os_platform])).toEqual([
      ['appliance', 'unknown'],
      ['control-node', 'linux'],
      ['rhel-target', 'linux'],
      ['win-jump', 'windows'],
    ]);
    expect(vms.every((v) => v.ip && v.runstate === 'running')).toBe(true);
  });

  it('commits the environment id before the next step runs', async () => {
    w = await world();
    const id = newRow(w);
    let seenAtCommit: string | null | undefined;
    let seenBeforeCommit: string | null | undefined;
    w.deps.checkpoint = (step) => {
      if (step === 'after-create') seenBeforeCommit = getPov(w.db, id)!.env_id;
      if (step === 'after-commit') seenAtCommit = getPov(w.db, id)!.env_id;
    };
    await runCreate(w.deps, id, w.ctx);
    expect(seenBeforeCommit).toBeNull();
    expect(seenAtCommit).toMatch(/^\d+$/);
  });

  it('a failed power-on keeps the environment id and says to press Destroy', async () => {
    w = await world();
    w.emu.faults.push({ match: 'PUT /configurations/*', status: 500, message: 'power failure' });
    const id = newRow(w);
    await expect(runCreate(w.deps, id, w.ctx)).rejects.toMatchObject({ code: 'unavailable' });
    const row = getPov(w.db, id)!;
    expect(row.state).toBe('failed');
    expect(row.env_id).not.toBeNull();
    expect(w.emu.state.environmentIds()).toEqual([row.env_id]);
    expect(row.error_message).toMatch(/press Destroy/);
    expect(row.error_message).toContain(row.env_id!);
    // destroy is allowed from failed and removes it
    const jobId = w.svc.destroy(id);
    const job = await w.jobs.wait(jobId);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    expect(getPov(w.db, id)!.state).toBe('destroyed');
    expect(w.emu.state.environmentIds()).toEqual([]);
  });

  it('a create Skytap refuses leaves no id, nothing billing, and a failed row', async () => {
    w = await world();
    w.emu.faults.push({ match: 'POST /configurations', status: 422, message: 'Template is not valid' });
    const id = newRow(w);
    await expect(runCreate(w.deps, id, w.ctx)).rejects.toMatchObject({ code: 'invalid_request' });
    const row = getPov(w.db, id)!;
    expect(row.state).toBe('failed');
    expect(row.env_id).toBeNull();
    expect(row.error_message).toMatch(/did not create/);
    expect(w.emu.state.environmentIds()).toEqual([]);
  });

  it('a create that reached Skytap but answered 500 is adopted, never re-sent', async () => {
    w = await world();
    w.emu.faults.push({ match: 'POST /configurations', status: 500, afterHandling: true });
    const id = newRow(w);
    const res = await runCreate(w.deps, id, w.ctx);
    expect(res.adopted).toBe(true);
    expect(w.emu.count('POST /configurations')).toBe(1);
    const row = getPov(w.db, id)!;
    expect(row.state).toBe('active');
    expect(w.emu.state.environmentIds()).toEqual([row.env_id]);
  });

  it('refuses an unknown template before creating anything', async () => {
    w = await world();
    const id = newRow(w, 'Bad', '424242');
    await expect(runCreate(w.deps, id, w.ctx)).rejects.toMatchObject({ code: 'not_found' });
    expect(getPov(w.db, id)!.state).toBe('failed');
    expect(w.emu.count('POST /configurations')).toBe(0);
  });

  it('a control-node install failure never fails the provision', async () => {
    w = await world();
    w.deps.controlNode.installAfterPowerOn = async () => {
      throw new Error('no Linux VM named control-node answered');
    };
    const id = newRow(w);
    const res = await runCreate(w.deps, id, w.ctx);
    expect(res.controlNode).toBe('failed');
    const row = getPov(w.db, id)!;
    expect(row.state).toBe('active');
    expect(row.error_message).toBeNull();
    expect(row.control_node_status).toBe('failed');
    expect(row.control_node_reason).toMatch(/control-node answered/);
  });

  it('a rate-limited power-on shows the badge and is never re-submitted', async () => {
    w = await world();
    w.emu.faults.push({ match: 'PUT /configurations/*', kind: 'rateLimited' });
    const id = newRow(w);
    let badge = false;
    const origSleep = w.deps.sleep;
    w.deps.sleep = async (ms, signal) => {
      if (getPov(w.db, id)?.rate_limited === 1) badge = true;
      await new Promise((r) => setTimeout(r, ms));
      void origSleep;
      if (signal.aborted) throw signal.reason;
    };
    await runCreate(w.deps, id, w.ctx);
    expect(badge).toBe(true);
    expect(w.emu.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
    const row = getPov(w.db, id)!;
    expect(row.runstate).toBe('running');
    expect(row.rate_limited).toBe(0);
  });
});

describe('cancel', () => {
  it('cancelling a create that waits on a busy environment keeps the id and says to press Destroy', async () => {
    w = await world();
    w.emu.faults.push({ match: 'POST /configurations', kind: 'stayBusy' });
    const { jobId, povId } = w.svc.create({ templateId: firstTemplateId(w), name: 'Stuck' });
    await expect.poll(() => getPov(w.db, povId)!.env_id, { timeout: 5000 }).not.toBeNull();
    w.jobs.cancel(jobId);
    const job = await w.jobs.wait(jobId);
    expect(job.state).toBe('cancelled');
    const row = getPov(w.db, povId)!;
    expect(row.state).toBe('failed');
    expect(row.env_id).not.toBeNull();
    expect(row.error_message).toMatch(/press Destroy/);
    expect(w.svc.get(povId).pov.actions.destroy).toBe(true);
  });
});

describe('destroy', () => {
  it('is complete only when GET answers 404', async () => {
    w = await world();
    const { povId } = await createPov(w);
    const states: string[] = [];
    w.deps.checkpoint = (step) => {
      if (step === 'after-delete') states.push(`${getPov(w.db, povId)!.state}:${w.emu.state.environmentIds().length}`);
    };
    await runDestroy(w.deps, povId, w.ctx);
    expect(states).toEqual(['destroying:1']);
    const row = getPov(w.db, povId)!;
    expect(row.state).toBe('destroyed');
    expect(row.env_gone_at).not.toBeNull();
    expect(w.emu.state.environmentIds()).toEqual([]);
    expect(listVms(w.db, povId).every((v) => v.gone_at !== null)).toBe(true);
  });

  it('a failed destroy never marks the row destroyed and can be re-run', async () => {
    w = await world();
    const { povId } = await createPov(w);
    w.emu.faults.push({ match: 'DELETE /configurations/*', status: 500, message: 'storage backend down' });
    await expect(runDestroy(w.deps, povId, w.ctx)).rejects.toBeTruthy();
    let row = getPov(w.db, povId)!;
    expect(row.state).toBe('failed');
    expect(row.env_id).not.toBeNull();
    expect(row.error_message).toMatch(/Destroy did not finish.*press Destroy again/s);
    expect(w.emu.state.environmentIds()).toEqual([row.env_id]);
    await runDestroy(w.deps, povId, w.ctx);
    row = getPov(w.db, povId)!;
    expect(row.state).toBe('destroyed');
    expect(w.emu.state.environmentIds()).toEqual([]);
  });

  it('an environment that stays busy after delete times out without claiming destroyed', async () => {
    w = await world();
    const { povId } = await createPov(w);
    const envId = getPov(w.db, povId)!.env_id!;
    w.deps.waitTimeoutMs = 300;
    w.emu.faults.push({ match: 'DELETE /configurations/*', kind: 'stayBusy' });
    await expect(runDestroy(w.deps, povId, w.ctx)).rejects.toMatchObject({ code: 'timeout' });
    expect(getPov(w.db, povId)!.state).toBe('failed');
    expect(w.emu.state.environmentIds()).toEqual([envId]);
    w.emu.state.stayBusy(envId, false);
    await runDestroy(w.deps, povId, w.ctx);
    expect(getPov(w.db, povId)!.state).toBe('destroyed');
  });
});

describe('start and suspend, gated on the confirmed state', () => {
  it('suspends and starts, refusing what the confirmed runstate does not allow', async () => {
    w = await world();
    const { povId } = await createPov(w);
    expect(() => w.svc.start(povId)).toThrow(expect.objectContaining({ code: 'conflict' }));
    const s = await w.jobs.wait(w.svc.suspend(povId));
    expect(s.state, JSON.stringify(s.error)).toBe('succeeded');
    expect(getPov(w.db, povId)!.runstate).toBe('suspended');
    expect(() => w.svc.suspend(povId)).toThrow(/needs the environment running; it was last confirmed suspended/);
    const st = await w.jobs.wait(w.svc.start(povId));
    expect(st.state).toBe('succeeded');
    expect(getPov(w.db, povId)!.runstate).toBe('running');
    const puts = w.emu.requests.filter((r) => r.method === 'PUT').map((r) => (r.body as { runstate: string }).runstate);
    expect(puts).toEqual(['running', 'suspended', 'running']);
  });

  it('refuses a second operation while one runs, and start on a provisioning POV', async () => {
    w = await world();
    const { jobId, povId } = w.svc.create({ templateId: firstTemplateId(w), name: 'Busy' });
    expect(() => w.svc.destroy(povId)).toThrow(expect.objectContaining({ code: 'conflict' }));
    expect(() => w.svc.start(povId)).toThrow(expect.objectContaining({ code: 'conflict' }));
    expect(w.svc.get(povId).pov.activeJobId).toBe(jobId);
    await w.jobs.wait(jobId);
    expect(w.svc.get(povId).pov.actions).toEqual({ start: false, suspend: true, destroy: true, refreshVms: true });
  });

  it('unknown POV is not_found', async () => {
    w = await world();
    expect(() => w.svc.start('nope')).toThrow(expect.objectContaining({ code: 'not_found' }));
  });
});
