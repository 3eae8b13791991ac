/**
 * Crash injection for local POVs: a child process runs create or destroy against the parent's
 * vm-manager (the real REST handler, fake launcher) and SIGKILLs itself at each step of the
 * platform lifecycle; then the app "restarts" (markInterrupted + resumeInterrupted on the same
 * SQLite file) and a sweep runs. After every case: no VM on the manager that no live POV row
 * accounts for, no row destroyed while its VMs exist, and no VM made twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamHub } from '../../main/core/streams';
import { JobRunner } from '../../main/services/jobs/runner';
import { LocalPlatform } from '../../main/services/lab-platforms/local';
import { getPov, listPovs } from '../../main/services/pov/repo';
import { PovService } from '../../main/services/pov/service';
import { openDatabase, type Db } from '../../main/services/store/db';
import { bareCollaborators, MIGRATIONS, runCrashChild } from './helpers';
import { fakeManager, fakeManagerSkip, templatesOf, TWO_VMS, type FakeManager } from './local-support';

const CREATE_STEPS = [
  'after-commit',
  'before-create-network',
  'after-create-network',
  'before-create-vm:control',
  'after-create-vm:control',
  'before-create-vm:target',
  'after-create-vm:target',
  'after-create',
  'after-power-on',
  'after-vms',
];
const DESTROY_STEPS = [
  'before-delete',
  'before-delete-vm:control',
  'after-delete-vm:control',
  'before-delete-vm:target',
  'after-delete-vm:target',
  'before-delete-network',
  'after-delete-network',
  'after-delete',
  'after-gone',
];

interface W {
  dir: string;
  file: string;
  db: Db;
  m: FakeManager;
  jobs: JobRunner;
  svc: PovService;
}
let w: W | undefined;
afterEach(async () => {
  if (!w) return;
  await w.jobs.shutdown();
  w.db.close();
  await w.m.close();
  rmSync(w.dir, { recursive: true, force: true });
  w = undefined;
});

async function setup(): Promise<W> {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-localcrash-'));
  const file = join(dir, 'povdesk.db');
  const db = openDatabase(file, MIGRATIONS);
  const m = await fakeManager();
  const jobs = new JobRunner(db);
  const svc = new PovService({
    db,
    jobs,
    hub: new StreamHub(),
    ...bareCollaborators(),
    skytap: async () => {
      throw new Error('no Skytap here');
    },
    local: new LocalPlatform({ api: async () => m.client, templates: templatesOf(TWO_VMS) }),
    pollMs: 15,
    waitTimeoutMs: 10_000,
  });
  return (w = { dir, file, db, m, jobs, svc });
}

async function invariants(w: W) {
  const names = await w.m.names();
  const rows = listPovs(w.db, true);
  const live = rows.filter((r) => r.state !== 'destroyed' && r.env_id);
  expect(
    names.filter((n) => !live.some((r) => n.startsWith(`${r.env_id}-`))),
    'VMs no live POV row accounts for',
  ).toEqual([]);
  for (const r of rows.filter((x) => x.state === 'destroyed'))
    expect(
      names.filter((n) => n.startsWith(`${r.env_id}-`)),
      'VMs of a destroyed row',
    ).toEqual([]);
  expect(new Set(names).size, 'a VM made twice').toBe(names.length);
  // Networks: each is a live row's (no orphan), and every VM of a POV is on its POV's network (none on a deleted one).
  const nets = await w.m.networks();
  expect(
    nets.filter((n) => !live.some((r) => n.name === r.env_id)).map((n) => n.name),
    'networks no live POV row accounts for',
  ).toEqual([]);
  const vms = await w.m.client.list();
  expect(
    vms.filter((v) => v.network !== v.name.slice(0, 'povdesk-12345678'.length)).map((v) => `${v.name} on ${v.network}`),
    "a VM off its POV's network",
  ).toEqual([]);
  expect(
    vms.filter((v) => !nets.some((n) => n.name === v.network)).map((v) => v.name),
    'a VM on a network that does not exist',
  ).toEqual([]);
}

async function restartAndSweep(w: W, killedJob: string) {
  w.jobs.markInterrupted();
  expect(w.jobs.get(killedJob)!.state).toBe('interrupted');
  for (const id of w.svc.resumeInterrupted()) await w.jobs.wait(id);
  const sweep = await w.jobs.wait(w.svc.runReconcile());
  expect(sweep.state, JSON.stringify(sweep.error)).toBe('succeeded');
}

describe.skipIf(fakeManagerSkip)('local POV crash injection (SIGKILL at every step, restart, sweep)', () => {
  for (const step of CREATE_STEPS) {
    it(`create killed at ${step}`, async () => {
      const w = await setup();
      const r = await runCrashChild({ CRASH_DB: w.file, CRASH_VMM: w.m.url, CRASH_OP: 'create', CRASH_AT: step });
      expect(r.signal, r.err).toBe('SIGKILL');
      expect(r.out).toContain(`crash ${step}`);
      const povId = /pov (\S+)/.exec(r.out)![1]!;
      expect(getPov(w.db, povId)!.state).toBe('provisioning');
      expect(getPov(w.db, povId)!.env_id).toBe(`povdesk-${povId.slice(0, 8)}`);
      await invariants(w);
      await restartAndSweep(w, /job (\S+)/.exec(r.out)![1]!);
      const row = getPov(w.db, povId)!;
      expect(row.state, row.error_message ?? '').toBe('active');
      expect(await w.m.names()).toEqual([`povdesk-${povId.slice(0, 8)}-control`, `povdesk-${povId.slice(0, 8)}-target`]);
      expect(await w.m.networks()).toEqual([{ name: `povdesk-${povId.slice(0, 8)}`, vms: await w.m.names() }]);
      await invariants(w);
      await w.jobs.wait(w.svc.destroy(povId));
      expect(getPov(w.db, povId)!.state).toBe('destroyed');
      expect(await w.m.names()).toEqual([]);
      expect(await w.m.networks()).toEqual([]);
    });
  }

  it('Internet access switched on while a create is cut short before its network is applied when the create resumes', async () => {
    const w = await setup();
    const r = await runCrashChild({ CRASH_DB: w.file, CRASH_VMM: w.m.url, CRASH_OP: 'create', CRASH_AT: 'before-create-network' });
    expect(r.signal, r.err).toBe('SIGKILL');
    const povId = /pov (\S+)/.exec(r.out)![1]!;
    const env = `povdesk-${povId.slice(0, 8)}`;
    expect(await w.m.networks()).toEqual([]);
    expect((await w.svc.setInternetAccess(povId, true)).internetAccess).toBe(true);
    await restartAndSweep(w, /job (\S+)/.exec(r.out)![1]!);
    expect(getPov(w.db, povId)!.state).toBe('active');
    expect(((await w.m.client.network(env)) as { povdesk?: { internet?: boolean } }).povdesk?.internet).toBe(true);
  });

  for (const step of DESTROY_STEPS) {
    it(`destroy killed at ${step}`, async () => {
      const w = await setup();
      const c = w.svc.create({ platform: 'local', templateId: TWO_VMS.id, name: 'Crash POV' });
      expect((await w.jobs.wait(c.jobId)).state).toBe('succeeded');
      const r = await runCrashChild({ CRASH_DB: w.file, CRASH_VMM: w.m.url, CRASH_OP: 'destroy', CRASH_AT: step, CRASH_POV: c.povId });
      expect(r.signal, r.err).toBe('SIGKILL');
      expect(getPov(w.db, c.povId)!.state).toBe('destroying');
      await invariants(w);
      await restartAndSweep(w, /job (\S+)/.exec(r.out)![1]!);
      expect(getPov(w.db, c.povId)!.state).toBe('destroyed');
      expect(await w.m.names()).toEqual([]);
      expect(await w.m.networks()).toEqual([]);
      await invariants(w);
    });
  }
});
