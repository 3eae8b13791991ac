/**
 * The guest half of a local POV, without the app: a baked Debian control node (the test agent
 * preloaded) in a real vm-manager under TCG, fenced (restrict=on) but for one guest→host forward
 * to the control-plane double; the bootstrap payload the Skytap path builds (buildBootstrap) set
 * after power-on through the user-data route; the guest's own runner fetches and runs it; the agent
 * container starts from the preloaded image (no registry) and redeems its code with the double;
 * then user_data is cleared, as on Skytap. Prints the wall times.
 *
 * `npm test` leaves this boot out (~140 s cold on TCG): test/lab/local-pov.test.ts boots the same
 * image through the app and checks all this and more (payload set after power-on and read by the
 * guest's runner, no redemption before it, the preloaded agent enrolled ed25519 with one redemption,
 * user_data cleared, no process left). This is the same chain without the app, to tell a guest
 * fault from an app fault when that one fails: `npm run test:slow` runs it (POVDESK_TEST_SLOW=1).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpControlPlane } from '../../main/services/control-node/control-plane';
import { buildBootstrap } from '../../main/services/control-node/payload';
import { VmManagerClient } from '../../main/vm-api/client';
import { GUEST_HOST_ALIAS } from '../../main/vm-api/povdesk';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { bakeSkip } from '../bake/support';
import { pidsWith, until, vmSkip } from '../vm-manager/support';
import { CONTROL_NODE_IMAGE, ensureControlNodeImage, type ControlNodeImage } from './control-node-image';

const skip = bakeSkip() ?? vmSkip();
const SLOW = process.env.POVDESK_TEST_SLOW === '1';
const secs = (ms: number) => Math.round(ms / 100) / 10;

describe.skipIf(skip !== null || !SLOW)('a local control node enrols its agent through a host forward (real guest, TCG)', () => {
  let state: string;
  let m: RunningManager;
  let client: VmManagerClient;
  let cp: ControlPlaneDouble;
  let img: ControlNodeImage;
  let id = '';

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'lab-guest-'));
    m = await serve({ stateDir: state, token: 'lab', dieWithParent: true });
    client = new VmManagerClient(m.url, 'lab', 900_000);
    const t0 = Date.now();
    img = await ensureControlNodeImage(client, state, (l) => console.log(l));
    console.log(
      `control-node image: ${img.baked ? `baked in ${img.bakeSeconds} s (cold)` : 'from the cache (warm)'}, imported ` +
        `in ${img.importSeconds} s; ${secs(Date.now() - t0)} s in all`,
    );
    cp = await new ControlPlaneDouble().start();
  }, 1_800_000);

  afterAll(async () => {
    if (id) await client.delete(id).catch(() => {});
    await m?.close({ stopVms: true });
    await cp?.stop();
    if (state) {
      expect(pidsWith(state)).toEqual([]);
      rmSync(state, { recursive: true, force: true });
    }
  });

  it('payload set after power-on → runner runs it → the preloaded agent enrols at the double → user_data cleared', async () => {
    const port = Number(new URL(cp.url).port);
    const plane = new HttpControlPlane(cp.url, cp.token);
    const code = await plane.mintEnrolmentCode('pov-lab');
    const t0 = Date.now();
    const vm = await client.create({
      name: 'lab-ctl',
      image: CONTROL_NODE_IMAGE,
      cpus: 1,
      memory_mib: 1024,
      disk_gib: 4,
      require_attestation: false,
      wait_for: 'none',
      povdesk: { host_forwards: [{ guest_port: port, host_port: port }] },
    });
    id = vm.id;
    // Powered on: the guest's runner polls the metadata service (204: no user_data yet).
    const booted = await until("the guest's first metadata contact", async () => (await client.get(id)).bootedAt, 600_000, 1000);
    const tBoot = Date.now();
    expect(cp.redemptions).toEqual([]);

    // No VM in the policy: a local guest's address (169.254.169.15) is in the link-local range the
    // policy always denies, so buildBootstrap refuses it.
    const { script } = buildBootstrap({
      povId: 'pov-lab',
      agentId: code.agentId,
      controlNodeName: 'lab-ctl',
      vms: [],
      enrolmentCode: code.code,
      agentImage: img.agentRef,
      controlPlaneUrl: `http://${GUEST_HOST_ALIAS}:${port}`,
    });
    await client.setUserData(id, script);
    const enrolled = await until(
      "the agent's enrolment",
      async () => {
        const s = await plane.enrolmentState(code.agentId);
        if (s.state === 'enrolled') return s;
        const v = await client.get(id);
        if (v.state === 'failed' || v.state === 'stopped') throw new Error(`the control node ${v.state}: ${v.lastError ?? ''}`);
        return null;
      },
      600_000,
      1000,
    ).catch(async (e: Error) => {
      console.log((await client.console(id, 200)).console);
      throw e;
    });
    const tEnrol = Date.now();
    expect(enrolled).toMatchObject({ state: 'enrolled', attestation: 'ed25519' });
    expect(cp.redemptions.filter((r) => r.status === 200)).toEqual([expect.objectContaining({ agentId: code.agentId })]);

    await client.setUserData(id, null);
    expect((await client.get(id)).povdesk.hasUserData).toBe(false);
    console.log(
      `control node: powered on → first metadata contact ${secs(tBoot - t0)} s (bootedAt ${booted}); user_data set → ` +
        `enrolled ${secs(tEnrol - tBoot)} s (tries: ${cp.redemptions.length})`,
    );
  }, 1_200_000);
});
