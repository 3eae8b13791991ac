/**
 * The one lifecycle's Skytap-born rules, on Local: a mutation waits while a VM is in transition
 * (Skytap's "never mutate a busy environment"), and a VM that failed is not restarted by the
 * create. The real vm-manager REST handler (fake launcher) answers at once, so a wrapper reports
 * one VM as `stopping` (or `failed`) for the next few VM-list reads, as a slow powerdown would.
 * (`booting` is powered on, as Skytap's `running` is, so it is not waited out: the control-node
 * payload goes in while the guest boots.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LocalVmApi } from '../../main/services/lab-platforms/local';
import { getPov } from '../../main/services/pov/repo';
import { testCore, type TestCore } from '../support/core';
import { fakeManager, fakeManagerSkip, templatesOf, TWO_VMS, type FakeManager } from './local-support';

let m: FakeManager;
let t: TestCore;
/** What the platform did, in order: 'list <first VM's reported state>', 'start', 'stop', 'delete'. */
let events: string[];
/** The next `held.reads` list reads report the first VM in `held.state`. */
const held = { reads: 0, state: 'stopping' };

function recordingApi(): LocalVmApi {
  return {
    list: async () => {
      const vms = await m.client.list();
      if (held.reads > 0 && vms.length > 0) {
        held.reads--;
        events.push(`list ${held.state}`);
        return vms.map((v, i) => (i === 0 ? { ...v, state: held.state as typeof v.state } : v));
      }
      events.push('list');
      return vms;
    },
    get: (id) => m.client.get(id),
    networks: () => m.client.networks(),
    createNetwork: (body) => m.client.createNetwork(body),
    deleteNetwork: (name) => m.client.deleteNetwork(name),
    create: (body) => m.client.create(body),
    start: async (id) => (events.push('start'), m.client.start(id)),
    stop: async (id) => (events.push('stop'), m.client.stop(id)),
    delete: async (id) => (events.push('delete'), m.client.delete(id)),
    setUserData: (id, data) => m.client.setUserData(id, data),
  };
}

beforeEach(async () => {
  if (fakeManagerSkip) return;
  events = [];
  held.reads = 0;
  m = await fakeManager();
  t = await testCore({
    env: { POVDESK_SKYTAP_POLL_MS: '20' },
    tuning: { lab: { api: async () => recordingApi(), templates: templatesOf(TWO_VMS) } },
  });
});
afterEach(async () => {
  await t?.close();
  await m?.close();
});

async function create() {
  const { jobId } = await t.call('pov.create', { platform: 'local', templateId: TWO_VMS.id, name: 'Busy' });
  const job = await t.jobs.wait(jobId);
  return { povId: job.subject!, job };
}

describe.skipIf(fakeManagerSkip)('local POVs: busy is waited out, a failed VM is not restarted', () => {
  it("the create's progress names the vm-manager's request, not Skytap's", async () => {
    const messages: string[] = [];
    const off = t.jobs.onChange((j) => messages.push(j.progress.message));
    const { job } = await create();
    off();
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    expect(messages).toContain(`from template ${TWO_VMS.name}`);
    expect(messages.filter((m) => /configurations/.test(m))).toEqual([]);
  });

  it('destroy sends no DELETE while a VM is stopping, and finishes once it has settled', async () => {
    const { povId, job } = await create();
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    events.length = 0;
    held.state = 'stopping';
    held.reads = 3;
    const { jobId } = await t.call('pov.destroy', { id: povId });
    expect((await t.jobs.wait(jobId)).state).toBe('succeeded');
    const firstDelete = events.indexOf('delete');
    expect(firstDelete, events.join(', ')).toBeGreaterThan(-1);
    expect(
      events.slice(0, firstDelete).filter((e) => e === 'list stopping'),
      events.join(', '),
    ).toHaveLength(3);
    expect(getPov(t.db, povId)!.state).toBe('destroyed');
    expect(await m.names()).toEqual([]);
  });

  it('suspend sends no stop while a VM is stopping, then stops every VM', async () => {
    const { povId } = await create();
    events.length = 0;
    held.state = 'stopping';
    held.reads = 3;
    const { jobId } = await t.call('pov.suspend', { id: povId });
    const done = await t.jobs.wait(jobId);
    expect(done.state, JSON.stringify(done.error)).toBe('succeeded');
    const firstStop = events.indexOf('stop');
    expect(
      events.slice(0, firstStop).filter((e) => e === 'list stopping'),
      events.join(', '),
    ).toHaveLength(3);
    expect(events.filter((e) => e === 'stop')).toHaveLength(2);
    expect(getPov(t.db, povId)!.runstate).toBe('stopped');
  });

  it('a VM failed after the create is not restarted: the create fails, names it, keeps the VMs and says Destroy', async () => {
    held.state = 'failed';
    held.reads = 1000;
    const { povId, job } = await create();
    expect(job.state).toBe('failed');
    expect(events).not.toContain('start');
    const row = getPov(t.db, povId)!;
    expect(row.error_message).toMatch(/failed to boot \((control|target)\).*kept on the vm-manager; press Destroy/);
    expect(await m.names()).toHaveLength(2);
    held.reads = 0;
    const { jobId } = await t.call('pov.destroy', { id: povId });
    expect((await t.jobs.wait(jobId)).state).toBe('succeeded');
    expect(await m.names()).toEqual([]);
  });
});
