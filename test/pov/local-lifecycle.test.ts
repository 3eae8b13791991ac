/**
 * Local POVs through the real core and the real vm-manager REST handler (fake launcher, no boot):
 * pov.create {platform: 'local'} makes one VM per template VM named by the POV's tag, powers
 * them, reads them; suspend/start are the vm-manager's stop/start; destroy completes only once
 * the manager lists none. Every refusal the registry makes for local is checked with its
 * message, and a mutating call that fails at each step (as if the process died there) leaves no
 * VM the database cannot account for, across a restart and a sweep.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getPov, listPovs } from '../../main/services/pov/repo';
import { testCore, type TestCore } from '../support/core';
import { crashingClient, fakeManager, fakeManagerSkip, templatesOf, TWO_VMS, type FakeManager } from './local-support';

let m: FakeManager;
let t: TestCore;
let crash: ReturnType<typeof crashingClient>;

beforeEach(async () => {
  if (fakeManagerSkip) return;
  m = await fakeManager();
  crash = crashingClient(m.client);
  t = await testCore({
    env: { POVDESK_SKYTAP_POLL_MS: '20' },
    tuning: { lab: { api: async () => crash.api, templates: templatesOf(TWO_VMS) } },
  });
});
afterEach(async () => {
  await t?.close();
  await m?.close();
});

async function create(name = 'Rehearsal'): Promise<{ povId: string; job: Awaited<ReturnType<TestCore['jobs']['wait']>> }> {
  const { jobId } = await t.call('pov.create', { platform: 'local', templateId: TWO_VMS.id, name });
  const job = await t.jobs.wait(jobId);
  return { povId: job.subject!, job };
}

async function waitJob(jobId: string) {
  return t.jobs.wait(jobId);
}

/** Every VM on the manager belongs to a POV row that is not destroyed (found by its name's tag). */
async function noOrphans() {
  const live = listPovs(t.db, true).filter((r) => r.state !== 'destroyed' && r.env_id);
  const orphans = (await m.names()).filter((n) => !live.some((r) => n.startsWith(`${r.env_id}-`)));
  expect(orphans, 'VMs no POV row accounts for').toEqual([]);
  const lying = listPovs(t.db, true).filter((r) => r.state === 'destroyed' && r.env_id);
  for (const r of lying)
    expect(
      (await m.names()).filter((n) => n.startsWith(`${r.env_id}-`)),
      `destroyed POV ${r.name} still has VMs`,
    ).toEqual([]);
}

/** An app restart: a new core over the same home, its interrupted jobs resumed, one sweep. */
async function restartAndSweep() {
  await t.restart();
  for (const id of t.services.pov.resumeInterrupted()) await t.jobs.wait(id);
  const sweep = await t.jobs.wait(t.services.pov.runReconcile());
  expect(sweep.state, JSON.stringify(sweep.error)).toBe('succeeded');
  return sweep;
}

describe.skipIf(fakeManagerSkip)('local POVs on the vm-manager (real REST handler, fake launcher)', () => {
  it('create → active with a VM per template VM named by the POV tag; suspend is stop, start is start; destroy leaves no VM', async () => {
    const { povId, job } = await create();
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const tag = povId.slice(0, 8);
    expect((job.result as { envId: string }).envId).toBe(`povdesk-${tag}`);
    expect(await m.names()).toEqual([`povdesk-${tag}-control`, `povdesk-${tag}-target`]);
    expect(crash.calls).toEqual([`create network povdesk-${tag}`, `create povdesk-${tag}-control`, `create povdesk-${tag}-target`]);

    const got = await t.call('pov.get', { id: povId });
    expect(got.pov).toMatchObject({
      platform: 'local',
      state: 'active',
      runstate: 'running',
      envId: `povdesk-${tag}`,
      templateName: 'Two VMs',
    });
    expect(got.pov.autoDelete?.at ?? null).toBeNull();
    // Each VM's address is its lease on the POV's own network (the manager's, as it reports it).
    expect(got.vms.map((v) => [v.name, v.os, v.runstate, v.ip])).toEqual([
      ['control', 'linux', 'ready', '10.0.0.2'],
      ['target', 'windows', 'ready', '10.0.0.3'],
    ]);
    expect((await m.client.list()).map((v) => [v.network, v.ip])).toEqual([
      [`povdesk-${tag}`, '10.0.0.2'],
      [`povdesk-${tag}`, '10.0.0.3'],
    ]);
    expect(getPov(t.db, povId)!.auto_delete_at ?? null).toBeNull();

    const { jobId: s } = await t.call('pov.suspend', { id: povId });
    expect((await waitJob(s)).state).toBe('succeeded');
    expect((await t.call('pov.get', { id: povId })).pov.runstate).toBe('stopped');
    expect((await m.client.list()).map((v) => v.state)).toEqual(['stopped', 'stopped']);
    const { jobId: st } = await t.call('pov.start', { id: povId });
    expect((await waitJob(st)).state).toBe('succeeded');
    expect((await t.call('pov.get', { id: povId })).pov.runstate).toBe('running');

    const { jobId: d } = await t.call('pov.destroy', { id: povId });
    const dj = await waitJob(d);
    expect(dj.state, JSON.stringify(dj.error)).toBe('succeeded');
    expect(getPov(t.db, povId)!.state).toBe('destroyed');
    expect(await m.names()).toEqual([]);
  });

  it('refusals up front with the registry reason: auto-delete at create (no row made), share links, moving auto-delete', async () => {
    await expect(
      t.call('pov.create', {
        platform: 'local',
        templateId: TWO_VMS.id,
        name: 'x',
        autoDeleteAt: new Date(Date.now() + 86_400_000).toISOString(),
      }),
    ).rejects.toMatchObject({
      code: 'unsupported',
      message:
        'This laptop (vm-manager) cannot do schedules (auto-delete timers): The vm-manager has no scheduler, so a local POV has ' +
        'no auto-delete timer; destroy it yourself.',
    });
    expect(listPovs(t.db, true)).toEqual([]);
    expect(await m.names()).toEqual([]);

    const { povId } = await create();
    await expect(t.call('share.create', { povId })).rejects.toMatchObject({
      code: 'unsupported',
      message:
        'This laptop (vm-manager) cannot do share links (publish sets): The vm-manager has no share links; share access to a ' +
        'local VM through your own network instead.',
    });
    await expect(t.call('pov.setAutoDelete', { povId, at: new Date(Date.now() + 86_400_000).toISOString() })).rejects.toMatchObject({
      code: 'unsupported',
      message: /^This laptop \(vm-manager\) cannot do schedules \(auto-delete timers\)/,
    });
  });

  it(
    'the control-node install asks the registry for the metadata mechanism first: a POV on a platform it does not know is refused ' +
      'before any job',
    async () => {
      const { povId } = await create();
      t.db.prepare("UPDATE povs SET platform = 'hyper-v' WHERE id = ?").run(povId);
      const before = t.jobs.list({ subject: povId, includeRoutine: true, limit: 100 }).length;
      await expect(t.call('pov.installControlNode', { id: povId })).rejects.toMatchObject({
        code: 'unsupported',
        message: /^Unknown lab platform "hyper-v"/,
      });
      expect(t.jobs.list({ subject: povId, includeRoutine: true, limit: 100 })).toHaveLength(before);
      t.db.prepare("UPDATE povs SET platform = 'local' WHERE id = ?").run(povId);
    },
  );

  it('an unknown local template fails the create with nothing made', async () => {
    const { jobId } = await t.call('pov.create', { platform: 'local', templateId: 'no-such', name: 'x' });
    const job = await t.jobs.wait(jobId);
    expect(job.state).toBe('failed');
    const row = getPov(t.db, job.subject!)!;
    expect(row).toMatchObject({ state: 'failed', env_id: null });
    expect(row.error_message).toMatch(/There is no local template no-such; nothing was created/);
    expect(crash.calls).toEqual([]);
  });

  for (const n of [1, 2, 3]) {
    it(
      `create fails at mutating call ${n} (the network, then each VM): what was made is kept, say Destroy, survive a restart and a ` +
        `sweep, and Destroy removes them`,
      async () => {
        crash.arm(n);
        const { povId, job } = await create();
        expect(job.state).toBe('failed');
        const row = getPov(t.db, povId)!;
        expect(row.state).toBe('failed');
        expect(row.env_id).toBe(`povdesk-${povId.slice(0, 8)}`);
        expect(row.error_message).toMatch(/kept on the vm-manager; press Destroy to remove them/);
        expect(await m.names()).toHaveLength(Math.max(0, n - 2));
        expect(await m.networks()).toHaveLength(n > 1 ? 1 : 0);
        await noOrphans();
        await restartAndSweep();
        await noOrphans();
        const { jobId } = await t.call('pov.destroy', { id: povId });
        expect((await t.jobs.wait(jobId)).state).toBe('succeeded');
        expect(getPov(t.db, povId)!.state).toBe('destroyed');
        expect(await m.names()).toEqual([]);
      },
    );
  }

  for (const n of [1, 2]) {
    it(`destroy fails at delete ${n}: not marked destroyed, the rest is kept and accounted for, Destroy again finishes`, async () => {
      const { povId } = await create();
      crash.arm(n);
      const { jobId } = await t.call('pov.destroy', { id: povId });
      expect((await t.jobs.wait(jobId)).state).toBe('failed');
      const row = getPov(t.db, povId)!;
      expect(row.state).toBe('failed');
      expect(row.error_message).toMatch(/^Destroy did not finish: .* VMs of povdesk-\w+ may still exist on the vm-manager/);
      expect(await m.names()).toHaveLength(3 - n);
      await restartAndSweep();
      expect(getPov(t.db, povId)!.state).toBe('failed');
      await noOrphans();
      const again = await t.call('pov.destroy', { id: povId });
      expect((await t.jobs.wait(again.jobId)).state).toBe('succeeded');
      expect(await m.names()).toEqual([]);
      await noOrphans();
    });
  }

  it('the sweep marks a local POV whose VMs were deleted outside POV Desk destroyed, and reports VMs no POV owns', async () => {
    const { povId } = await create();
    const stray = await m.client.create({
      name: 'povdesk-0badf00d-control',
      image: 'povdesk-test',
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      wait_for: 'none',
    });
    for (const v of await m.client.list()) if (v.name.startsWith(`povdesk-${povId.slice(0, 8)}-`)) await m.client.delete(v.id);
    const sweep = await t.jobs.wait(t.services.pov.runReconcile());
    expect(sweep.state, JSON.stringify(sweep.error)).toBe('succeeded');
    expect((sweep.result as { local: { gone: number; leftovers: string[] } }).local).toMatchObject({
      gone: 1,
      leftovers: ['povdesk-0badf00d'],
    });
    const row = getPov(t.db, povId)!;
    expect(row.state).toBe('destroyed');
    expect(row.error_message).toMatch(/deleted outside POV Desk/);
    expect((await m.client.list()).map((v) => v.id)).toEqual([stray.id]);
  });
});
