/**
 * The control-node install on a local POV: the same bootstrap bytes as Skytap's for the same
 * inputs, handed to the vm-manager after power-on and read by the guest at
 * /skytap/vms/self/user_data, cleared once the agent enrols. The Skytap emulator and the real
 * vm-manager REST handler + metadata service (fake launcher) over HTTP, the control-plane double.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentStore } from '../../main/services/control-node/agents';
import { DEFAULT_CONFIG } from '../../main/services/control-node/config';
import type { ControlPlane } from '../../main/services/control-node/control-plane';
import { installControlNode, type ControlNodePov, type InstallJob } from '../../main/services/control-node/install';
import { BEGIN_MARKER, END_MARKER } from '../../main/services/control-node/markers';
import { LocalPlatform } from '../../main/services/lab-platforms/local';
import type { LabPlatform } from '../../main/services/lab-platforms/platform';
import { SkytapPlatform } from '../../main/services/lab-platforms/skytap';
import { getPov } from '../../main/services/pov/repo';
import { GUEST_HOST_ALIAS } from '../../main/vm-api/povdesk';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { clientFor, coreWorld, type CoreWorld } from './helpers';
import { fakeManager, fakeManagerSkip, templatesOf, TWO_VMS, type FakeManager } from './local-support';

let m: FakeManager | undefined;
let w: CoreWorld | undefined;
let cp: ControlPlaneDouble | undefined;
afterEach(async () => {
  await w?.close();
  await cp?.stop().catch(() => {});
  await m?.close();
  w = cp = m = undefined;
});

async function until<T>(what: string, f: () => Promise<T | null | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(fakeManagerSkip)('the control-node install on a local POV', () => {
  it('hands the vm-manager byte-for-byte the payload Skytap gets for the same POV inputs, and clears both after enrolment', async () => {
    m = await fakeManager();
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    // A real environment on each platform, each with a Linux VM called control-node.
    const sky = clientFor(w.emu.url);
    const tpl = [...w.emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
    const env = await sky.createEnvironment({ templateId: tpl.id, name: 'bytes [povdesk 00000000]' });
    const skyVm = (await sky.listVms(env.id)).find((v) => v.name === 'control-node')!;
    const localVm = await m.client.create({
      name: 'povdesk-00000000-control-node',
      image: TEST_IMAGE,
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      require_attestation: false,
      wait_for: 'none',
    });

    const platforms: { p: LabPlatform; envId: string; vmId: string; read: () => Promise<string> }[] = [
      { p: new SkytapPlatform(sky), envId: env.id, vmId: skyVm.id, read: () => sky.getVmUserData(env.id, skyVm.id) },
      {
        p: new LocalPlatform({ api: async () => m!.client, templates: templatesOf() }),
        envId: 'povdesk-00000000',
        vmId: localVm.id,
        read: async () => {
          const r = await m!.guestUserData(localVm.id);
          return r.status === 204 ? '' : r.text;
        },
      },
    ];
    const handed: string[] = [];
    const after: string[] = [];
    for (const { p, envId, vmId, read } of platforms) {
      w.db.prepare('DELETE FROM control_node_agents').run();
      let seen: string | null = null;
      // The same inputs: POV id, VMs and addresses, agent id and code, image and URL.
      const pov: ControlNodePov = {
        id: 'pov-bytes',
        platform: p.id,
        envId,
        runstate: 'running',
        controlNodeName: null,
        enrolledVmId: null,
        vms: [
          { id: vmId, name: 'control-node', os: 'linux', ip: '10.0.0.10' },
          { id: 'other', name: 'DC01', os: 'windows', ip: '10.0.0.11' },
        ],
      };
      const controlPlane: ControlPlane = {
        mintEnrolmentCode: async () => ({
          agentId: 'agent-bytes',
          code: 'ENROL-0123456789abcdef0123456789',
          expiresAt: new Date(Date.now() + 900_000).toISOString(),
        }),
        mintJoinToken: async () => {
          throw new Error('no SPIRE here');
        },
        enrolmentState: async (agentId) => ({
          agentId,
          state: seen ? 'enrolled' : 'pending',
          attestation: seen ? 'ed25519' : null,
          enrolledAt: seen ? new Date().toISOString() : null,
        }),
        revoke: async () => 'revoked',
        spire: async () => null,
      };
      const job: InstallJob = { signal: new AbortController().signal, progress: () => {}, log: () => {} };
      const res = await installControlNode(
        {
          povs: { getPov: () => pov, setControlNode: () => {} },
          userData: {
            set: async (e, v, c) => {
              await p.setUserData(e, v, c);
              seen = await read(); // what the platform now holds for the guest
            },
            clear: (e, v) => p.setUserData(e, v, null),
          },
          controlPlane,
          agents: new AgentStore(w.db),
          config: { ...DEFAULT_CONFIG, agentImage: 'registry.example.com/agent:1', controlPlaneUrl: 'https://cp.example.com' },
          enrolPollMs: 10,
        },
        pov.id,
        job,
      );
      expect(res).toMatchObject({ vm: 'control-node', attestation: 'ed25519' });
      handed.push(seen!);
      after.push(await read());
    }
    expect(handed[0]).toContain(BEGIN_MARKER);
    expect(handed[0]).toContain(END_MARKER);
    expect(Buffer.from(handed[1]!).equals(Buffer.from(handed[0]!)), 'the local payload differs from the Skytap payload').toBe(true);
    expect(after).toEqual(['', '']);
  }, 30_000);

  it(
    'through the core: a local POV is created with the host forward its agent URL needs, the guest reads the payload after ' +
      'power-on, enrols, and user_data is cleared',
    async () => {
      m = await fakeManager();
      cp = await new ControlPlaneDouble().start();
      w = await coreWorld({
        env: { POVDESK_SKYTAP_POLL_MS: '20' },
        noSkytap: true,
        tuning: { controlNode: { enrolPollMs: 30 }, lab: { api: async () => m!.client, templates: templatesOf(TWO_VMS) } },
      });
      const cpPort = Number(new URL(cp.url).port);
      await w.call('controlNode.saveSettings', {
        controlPlaneUrl: cp.url,
        agentUrl: `http://${GUEST_HOST_ALIAS}:8080`,
        token: cp.token,
        agentImage: 'povdesk/test-agent:1',
      });
      const created = await w.call('pov.create', { platform: 'local', templateId: TWO_VMS.id, name: 'Rehearsal' });
      const povId = (await w.jobs.wait(created.jobId)).subject!;
      const control = (await m.client.list()).find((v) => v.name.endsWith('-control'))!;
      for (const v of await m.client.list()) expect(m.vms.get(v.id).hostForwards, v.name).toEqual([{ guestPort: 8080, hostPort: cpPort }]);

      // The guest: the runner polls the metadata service; the agent enrols with the code it names.
      const payload = await until('the payload at /skytap/vms/self/user_data', async () => {
        const r = await m!.guestUserData(control.id);
        return r.status === 200 && r.text.includes(BEGIN_MARKER) ? r.text : null;
      });
      expect(payload).toContain(`http://${GUEST_HOST_ALIAS}:8080`);
      // The policy grants each VM of the POV its /32: its lease on the POV's own network, as the manager reports it.
      const leases = (await m.client.list()).map((v) => [v.name.slice('povdesk-12345678-'.length), v.ip] as const);
      expect(leases.map(([, ip]) => ip)).toEqual(['10.0.0.2', '10.0.0.3']);
      for (const [name, ip] of leases) expect(payload).toContain(`  - {vm: "${name}", cidr: ${ip}/32, ports: [`);
      const agentId = /AGENT_ID='([^']+)'/.exec(payload)![1]!;
      cp.enrol(agentId, 'ed25519');
      await until('enrolled', async () => getPov(w!.db, povId)!.control_node_status === 'enrolled' || null);
      expect((await m.guestUserData(control.id)).status).toBe(204);
      expect(getPov(w.db, povId)).toMatchObject({ control_node_vm_id: control.id, control_node_mode: 'ed25519' });

      const d = await w.call('pov.destroy', { id: povId });
      expect((await w.jobs.wait(d.jobId)).state).toBe('succeeded');
      expect(cp.agents.get(agentId)?.state).toBe('revoked');
      expect(await m.names()).toEqual([]);
    },
    30_000,
  );
});
