/**
 * A local POV's clean state and Internet access through the real core and the real vm-manager REST
 * handler (fake launcher, no boot): pov.snapshot stops the running VMs, saves each one (vTPM state
 * and firmware variables kept beside the VM) and starts them again; pov.reset is refused before a
 * save, then stops, puts back what was saved and starts; both are refused on Skytap with the
 * reason; pov.setInternetAccess switches the POV's network. Real guests: test/vm-manager/networks.test.ts.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testCore, type TestCore } from '../support/core';
import { fakeManager, fakeManagerSkip, templatesOf, TWO_VMS, type FakeManager } from './local-support';

let m: FakeManager;
let t: TestCore;

beforeEach(async () => {
  if (fakeManagerSkip) return;
  m = await fakeManager();
  t = await testCore({
    env: { POVDESK_SKYTAP_POLL_MS: '20' },
    tuning: { lab: { api: async () => m.client, templates: templatesOf(TWO_VMS) } },
  });
});
afterEach(async () => {
  await t?.close();
  await m?.close();
});

describe.skipIf(fakeManagerSkip)("a local POV's clean state and Internet access", () => {
  it('save stops, saves every VM and starts again; reset puts the saved firmware variables back and starts', async () => {
    const { jobId } = await t.call('pov.create', { platform: 'local', templateId: TWO_VMS.id, name: 'Clean' });
    const povId = (await t.jobs.wait(jobId)).subject!;
    await expect(t.call('pov.reset', { id: povId })).rejects.toMatchObject({
      code: 'conflict',
      message: /no clean state yet: press Save clean state first/,
    });

    const before = Date.now();
    const s = await t.jobs.wait((await t.call('pov.snapshot', { id: povId })).jobId);
    expect(s.state, JSON.stringify(s.error)).toBe('succeeded');
    const pov = (await t.call('pov.get', { id: povId })).pov;
    expect(Date.parse(pov.cleanSnapshotAt!)).toBeGreaterThanOrEqual(before - 1000);
    expect(pov.runstate).toBe('running');
    const vms = await m.client.list();
    expect(vms.map((v) => v.state)).toEqual(['ready', 'ready']);
    for (const v of vms) expect(existsSync(join(v.paths.dir!, 'clean', 'OVMF_VARS.fd')), v.name).toBe(true);

    // what changes after the save (here: the firmware variables) is put back by the reset
    for (const v of vms) writeFileSync(v.paths.ovmfVars!, 'changed after the save');
    const r = await t.jobs.wait((await t.call('pov.reset', { id: povId })).jobId);
    expect(r.state, JSON.stringify(r.error)).toBe('succeeded');
    for (const v of await m.client.list()) {
      expect(readFileSync(v.paths.ovmfVars!, 'utf8'), v.name).toBe('');
      expect(v.state).toBe('ready');
    }
    // the job says per VM how it came back: this launcher saves no memory, so each boots its disks, and why
    const log = (await t.call('jobs.get', { id: r.id })).log.map((l) => l.message);
    for (const v of vms)
      expect(log).toContain(`${v.name}: boots its saved disks (this vm-manager cannot save memory: a reset boots the saved disks)`);
    expect((await t.call('pov.get', { id: povId })).pov.runstate).toBe('running');
  });

  it("Internet access is off by default and switches the POV's network; a Skytap POV is refused", async () => {
    const { jobId } = await t.call('pov.create', { platform: 'local', templateId: TWO_VMS.id, name: 'Net' });
    const povId = (await t.jobs.wait(jobId)).subject!;
    expect((await t.call('pov.get', { id: povId })).pov.internetAccess).toBe(false);
    const env = `povdesk-${povId.slice(0, 8)}`;
    expect(((await m.client.network(env)) as { povdesk?: { internet?: boolean } }).povdesk?.internet).toBe(false);
    expect((await t.call('pov.setInternetAccess', { povId, on: true })).pov.internetAccess).toBe(true);
    expect(((await m.client.network(env)) as { povdesk?: { internet?: boolean } }).povdesk?.internet).toBe(true);
    t.db.prepare("UPDATE povs SET platform = 'skytap' WHERE id = ?").run(povId);
    for (const call of [() => t.call('pov.snapshot', { id: povId }), () => t.call('pov.setInternetAccess', { povId, on: false })]) {
      await expect(call()).rejects.toMatchObject({ code: 'unsupported', message: /for POVs on this laptop/ });
    }
    t.db.prepare("UPDATE povs SET platform = 'local' WHERE id = ?").run(povId);
  });
});
