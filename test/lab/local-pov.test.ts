/**
 * A full local POV, real parts only: the app's core (its Local platform, POV lifecycle and
 * control-node install), the real vm-manager (QEMU + swtpm + OVMF under TCG here), a two-VM local
 * template made through labTemplates.create (the baked Debian control node with the test agent
 * preloaded, and the test image), the control-plane double on 127.0.0.1 reached from the guest
 * through the GUEST_HOST_ALIAS forward. Nothing in the chain is told the answer: the control node
 * is resolved by the five-step rule, the payload is set after power-on, the runner baked in the
 * guest fetches and runs it, the agent container in the guest's Docker redeems its code with the
 * double, the app sees the enrolment and clears user_data (the runner's next read gets 204), and
 * destroy leaves no qemu or swtpm process and no VM record. Two real boots (one per VM).
 * Prints the wall times for the note.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPov } from '../../main/services/pov/repo';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { until, vmSkip } from '../vm-manager/support';
import { needs } from '../support/system';
import { CONTROL_NODE_IMAGE } from './control-node-image';
import { createLocalPov, localPovWorld, type LocalPovWorld } from './local-pov-world';

// The bake (on a cold cache) needs the template builder's tools too.
const skip = vmSkip() ?? needs(['mmdebstrap', 'guestfish']);

describe.skipIf(skip !== null)(
  'a full local POV (TCG): control node resolved, payload run in the guest, agent enrolled, destroy clean',
  () => {
    let w: LocalPovWorld;

    beforeAll(async () => {
      // A short enrolment poll: the wall time measures the guest, not the app's 10 s default wait.
      w = await localPovWorld({
        env: { POVDESK_SKYTAP_POLL_MS: '500' },
        tuning: { controlNode: { enrolPollMs: 500 } },
        log: (l) => console.log(l),
      });
    }, 40 * 60_000);

    afterAll(async () => {
      await w?.close();
    });

    it(
      'create → control node enrolled → user_data cleared → destroy leaves nothing',
      async () => {
        const { t, m, cp, seen } = w;
        const { template } = await t.call('labTemplates.create', {
          name: 'Control node and test VM',
          vms: [
            // Two Linux VMs: step 3 (the only Linux VM) does not apply, step 4 (a VM called broker) picks this one.
            { name: 'broker', image: CONTROL_NODE_IMAGE, os: 'linux', cpus: 2, memoryMib: 2048, diskGib: 8, requireAttestation: false },
            { name: 'test-vm', image: TEST_IMAGE, os: 'linux', cpus: 1, memoryMib: 2048, diskGib: 1, requireAttestation: true },
          ],
        });
        expect(template.vms.map((v) => v.name)).toEqual(['broker', 'test-vm']);

        const run = await createLocalPov(w, template.id, 'Full local rehearsal', 'broker');
        const povId = run.povId;
        expect(run.create.state, `create ${JSON.stringify(run.create.error)}\n${run.diagnose()}`).toBe('succeeded');
        expect(run.create.result).toMatchObject({ controlNode: 'installed' });
        // The create job ends once the VMs run and the payload is set; the install job waits for the enrolment.
        expect(run.install?.state, `install ${JSON.stringify(run.install?.error)}\n${run.diagnose()}`).toBe('succeeded');
        expect(getPov(t.db, povId)?.control_node_status, run.diagnose()).toBe('enrolled');
        expect(run.enrolledAt).toBeGreaterThan(0);
        const createMs = run.enrolledAt - run.t0;
        const broker = m.vms.list().find((v) => v.name.endsWith('-broker'));

        // The POV and its VMs, as the app shows them.
        const got = await t.call('pov.get', { id: povId });
        expect(got.pov).toMatchObject({ platform: 'local', state: 'active', runstate: 'running' });
        expect(got.vms.map((v) => v.name).sort()).toEqual(['broker', 'test-vm']);
        expect(broker, 'the manager has the broker VM').toBeDefined();
        expect(got.pov.controlNode).toMatchObject({ vm: 'broker', vmId: broker!.id, status: 'enrolled', mode: 'ed25519' });

        // The forward the agent needed, on every VM of the POV.
        for (const v of m.vms.list()) expect(v.hostForwards, v.name).toEqual([{ guestPort: 8080, hostPort: Number(new URL(cp.url).port) }]);

        // Set after power-on, once; the guest read it; the guest's agent redeemed the code (nobody else knew it).
        const sets = seen.userData.filter((u) => u.vmId === broker!.id);
        expect(sets.length, JSON.stringify(sets)).toBe(2);
        expect(sets[0]).toMatchObject({ set: true });
        // After power-on: QEMU runs (the guest may still be booting; its runner polls from boot).
        expect(['booting', 'attesting', 'ready', 'running']).toContain(sets[0]!.vmState);
        expect(sets[0]!.at).toBeGreaterThanOrEqual(Date.parse(broker!.startedAt!));
        expect(sets[1]).toMatchObject({ set: false });
        const fetched = seen.fetches.find((f) => f.vmId === broker!.id && f.payload);
        expect(fetched, 'the runner in the guest fetched the payload').toBeDefined();
        expect(cp.agents.size, 'one enrolment code minted').toBe(1);
        const agentId = [...cp.agents.keys()][0]!;
        expect(cp.redemptions.filter((r) => r.status === 200).map((r) => r.agentId)).toEqual([agentId]);
        const redeemed = cp.redemptions.find((r) => r.status === 200)!;
        expect(redeemed.at).toBeGreaterThan(fetched!.at);
        expect(cp.agents.get(agentId)).toMatchObject({ state: 'enrolled', attestation: 'ed25519' });
        // Nothing else was ever handed to the test VM.
        expect(seen.userData.filter((u) => u.vmId !== broker!.id)).toEqual([]);

        // Cleared after enrolment: the manager holds none, and the runner's next poll reads 204.
        expect(w.userDataOf(broker!.id)).toBeNull();
        const clearedAt = sets[1]!.at;
        await until(
          'the runner reading 204 after the clear',
          () => seen.fetches.some((f) => f.vmId === broker!.id && f.at > clearedAt && !f.payload),
          90_000,
        );

        // Destroy: no VM record, no qemu or swtpm process, the agent revoked.
        expect(w.processes().length).toBeGreaterThanOrEqual(4); // two VMs: qemu + swtpm each
        const t1 = Date.now();
        const d = await t.jobs.wait((await t.call('pov.destroy', { id: povId })).jobId);
        const destroyMs = Date.now() - t1;
        expect(d.state, JSON.stringify(d.error)).toBe('succeeded');
        expect((await t.call('pov.get', { id: povId })).pov.state).toBe('destroyed');
        expect(m.vms.list()).toEqual([]);
        expect(await w.client.list()).toEqual([]);
        expect(w.processes()).toEqual([]);
        expect(cp.agents.get(agentId)?.state).toBe('revoked');

        const created = seen.created.get(broker!.name)!;
        const firstFetch = seen.fetches.find((f) => f.vmId === broker!.id)!;
        console.log(
          `full local POV on TCG: create → control node enrolled ${(createMs / 1000).toFixed(1)} s ` +
            `(control-node VM create → runner's first user_data read ${((firstFetch.at - created) / 1000).toFixed(1)} s, ` +
            `payload read → enrol at the double ${((redeemed.at - fetched!.at) / 1000).toFixed(1)} s); ` +
            `destroy ${(destroyMs / 1000).toFixed(1)} s`,
        );
      },
      40 * 60_000,
    );
  },
);
