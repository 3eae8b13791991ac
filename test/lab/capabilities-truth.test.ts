/**
 * The capability registry says only what each platform really does. Every claim is checked here
 * against the thing itself where it can be on this machine: for `local`, the real vm-manager
 * daemon's REST handler and metadata service (gsd's fake launcher in place of QEMU, as in
 * test/vm-api/daemon.test.ts); for `skytap`, the client against the Skytap emulator.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS, type Feature } from '../../shared/lab-platforms';
import { LocalLabTemplates, TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { generatePassword } from '../../main/services/share/password';
import { shareApi } from '../../main/services/skytap/share-api';
import { VmManagerClient } from '../../main/vm-api/client';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { SEEDS } from '../skytap-emulator';
import { client, emulator } from '../skytap/helpers';
import { fakeManager, fakeManagerSkip, type FakeManager } from '../pov/local-support';

const FEATURES: Feature[] = ['templates', 'suspend', 'publishSets', 'schedules', 'projectScoping', 'bootstrapInjection'];
const supported = (p: 'skytap' | 'local') => FEATURES.filter((f) => PLATFORMS[p].features[f].supported).sort();

describe.skipIf(fakeManagerSkip)('the local platform does what the registry says', () => {
  let m: FakeManager;
  let vmm: VmManagerClient;

  beforeAll(async () => {
    m = await fakeManager();
    vmm = m.client;
  }, 60_000);

  afterAll(async () => {
    await m?.close();
  });

  it('claims exactly templates, suspend and bootstrap injection by metadata', () => {
    expect(supported('local')).toEqual(['bootstrapInjection', 'suspend', 'templates']);
    expect(PLATFORMS.local.bootstrapInjection).toBe('metadata');
  });

  it("bootstrapInjection metadata: the metadata service serves a VM's user_data at /skytap/vms/self/user_data (204 if none)", async () => {
    const payload = 'BEGIN-DASHBOARD-AGENT-BOOTSTRAP\nline\nEND-DASHBOARD-AGENT-BOOTSTRAP';
    const withData = await vmm.create({
      name: 'truth-ud',
      image: TEST_IMAGE,
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      user_data: payload,
      require_attestation: false,
      wait_for: 'none',
    });
    const without = await vmm.create({
      name: 'truth-none',
      image: TEST_IMAGE,
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      require_attestation: false,
      wait_for: 'none',
    });
    expect(await m.guestUserData(withData.id)).toEqual({ status: 200, text: payload });
    expect((await m.guestUserData(without.id)).status).toBe(204);
    await vmm.delete(withData.id);
    await vmm.delete(without.id);
  });

  it('suspend is stop then start: the VM boots again (a new process) from the same disk', async () => {
    const v = await vmm.create({
      name: 'truth-stop',
      image: TEST_IMAGE,
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      require_attestation: false,
      wait_for: 'none',
    });
    const qemuPids = () =>
      [...m.launcher.procs.entries()].filter(([, p]) => p.vm === v.id && p.kind === 'qemu' && p.alive).map(([pid]) => pid);
    const before = qemuPids();
    const disk = m.vms.get(v.id).paths.disk;
    expect(before).toHaveLength(1);
    expect((await vmm.stop(v.id)).state).toBe('stopped');
    expect(qemuPids()).toEqual([]);
    await vmm.start(v.id);
    const after = qemuPids();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    expect(m.vms.get(v.id).paths.disk).toBe(disk);
    await vmm.delete(v.id);
  });

  it("templates: the bundled template's images are in the vm-manager's image list", async () => {
    const images = (await vmm.images()).map((i) => i.id);
    const t = new LocalLabTemplates({ dir: join(m.state, 'lab-templates') }).get(TEST_TEMPLATE_ID)!;
    for (const vm of t.vms) expect(images).toContain(vm.image);
  });

  it('no share links, schedules or projects: the API the vm-manager serves has no such route', async () => {
    const doc = JSON.parse(await vmm.openapi()) as { paths: Record<string, unknown> };
    const paths = Object.keys(doc.paths);
    expect(paths).toContain('/vms/{id}/stop'); // the document is the real one
    expect(paths.filter((p) => /publish|share|portal|schedule|project/i.test(p))).toEqual([]);
    const clientMethods = Object.getOwnPropertyNames(VmManagerClient.prototype);
    expect(clientMethods.filter((m) => /publish|share|portal|schedule|project/i.test(m))).toEqual([]);
  });
});

describe('the Skytap platform does what the registry says (against the emulator)', () => {
  it('claims every feature, injecting by metadata', () => {
    expect(supported('skytap')).toEqual([...FEATURES].sort());
    expect(PLATFORMS.skytap.bootstrapInjection).toBe('metadata');
  });

  it('templates, suspend, user_data, publish sets, schedules and project scoping each work through the client', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const { c } = client(emu);
    // templates: an environment made from a listed template
    const templates = (await c.listTemplatesPage(50, 0)).items;
    expect(templates.length).toBeGreaterThan(0);
    const env = await c.createEnvironment({ templateId: templates[0]!.id, name: 'truth' });
    const running = emu.state.addEnvironment({ name: 'r', templateId: templates[0]!.id, runstate: 'running' });
    // suspend
    await c.setRunstate(running.id, 'suspended');
    for (let i = 0; i < 200 && (await c.getEnvironment(running.id))?.runstate !== 'suspended'; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect((await c.getEnvironment(running.id))?.runstate).toBe('suspended');
    // bootstrapInjection: user_data on a VM
    const vm = (await c.listVms(running.id))[0]!;
    await c.setVmUserData(running.id, vm.id, 'payload');
    expect(await c.getVmUserData(running.id, vm.id)).toBe('payload');
    // publishSets and schedules
    const api = shareApi(c);
    await api.createPublishSet(running.id, {
      name: 'p',
      vmIds: [vm.id],
      access: 'use',
      password: generatePassword(),
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    expect(emu.sharing.portals.size).toBe(1);
    const s = await api.createSchedule({ title: 't', envId: env.id, startAt: new Date(), endAt: new Date(Date.now() + 3_600_000) });
    expect(s).toMatchObject({ delete_at_end: true });
    // projectScoping: a client scoped to project 77 sees only its template
    const scoped = (await client(emu, { projectId: '77' }).c.listTemplatesPage(50, 0)).items;
    expect(scoped.length).toBeGreaterThan(0);
    expect(scoped.length).toBeLessThan(templates.length);
  });
});
