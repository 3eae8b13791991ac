/**
 * The world of a full local POV, shared by test/lab/local-pov.test.ts and test/bench/local-pov.ts:
 * the real vm-manager in this process (real QEMU + swtpm + OVMF, TCG here) with the cached test
 * image and the baked Debian control node (test/lab/control-node-image.ts), the control-plane
 * double on 127.0.0.1, and the app's real core attached to that manager as its local one. The
 * control-node settings point the agent at GUEST_HOST_ALIAS:8080, which the Local platform turns
 * into a guest→host forward to the double's port (docs/lab-platforms.md).
 *
 * It observes, without changing anything, the moments the bench and the note need: when the
 * manager was asked to create each VM, each guest request for its user_data (what the runner in
 * the guest saw: the payload or nothing), and each user-data change the app made.
 */
import { rmSync } from 'node:fs';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import type { JobRecord } from '../../shared/contract/core';
import { getPov } from '../../main/services/pov/repo';
import { GUEST_HOST_ALIAS } from '../../main/vm-api/povdesk';
import { VmManagerClient } from '../../main/vm-api/client';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import type { CoreTuning } from '../../main/core/create';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { testCore, type TestCore } from '../support/core';
import { attachLocalManager } from '../vm/helpers';
import { pidsWith, stateWithImage } from '../vm-manager/support';
import { AGENT_REF } from './agent-image';
import { ensureControlNodeImage, type ControlNodeImage } from './control-node-image';

const TOKEN = 'local-pov-world-0123456789abcdef';
/** The port the agent's URL names inside the guest (GUEST_HOST_ALIAS:8080 → the double's port). */
export const GUEST_AGENT_PORT = 8080;

export interface Seen {
  /** VM name → when the manager was asked to create it (ms, Date.now). */
  created: Map<string, number>;
  /** Every guest read of its user_data, in order: which VM, when, and whether it got the payload. */
  fetches: { vmId: string; at: number; payload: boolean }[];
  /** Every user-data change the app made: which VM, when, set or cleared, and the VM's state then. */
  userData: { vmId: string; at: number; set: boolean; vmState: string }[];
}

export interface LocalPovWorld {
  m: RunningManager;
  client: VmManagerClient;
  cp: ControlPlaneDouble;
  t: TestCore;
  image: ControlNodeImage;
  state: string;
  seen: Seen;
  /** The user_data the manager holds for a VM now (what the metadata service would serve; null: 204). */
  userDataOf(vmId: string): string | null;
  consoleTail(vmId: string, lines?: number): string;
  /** qemu/swtpm processes whose argv names this manager's state dir. */
  processes(): number[];
  close(): Promise<void>;
}

export async function localPovWorld(
  o: { tuning?: CoreTuning; env?: Record<string, string>; log?: (l: string) => void } = {},
): Promise<LocalPovWorld> {
  const log = o.log ?? (() => {});
  const state = stateWithImage('vmm-localpov-full-');
  let m: RunningManager | null = null;
  let cp: ControlPlaneDouble | null = null;
  let t: TestCore | null = null;
  const cleanup = async () => {
    await t?.close().catch(() => {});
    await m?.close({ stopVms: true }).catch(() => {});
    await cp?.stop().catch(() => {});
    rmSync(state, { recursive: true, force: true });
  };
  try {
    // learn mode for the test image: its golden values may not be learned for this host yet
    m = await serve({ stateDir: state, token: TOKEN, learn: [TEST_IMAGE], dieWithParent: true });
    const client = new VmManagerClient(m.url, TOKEN, 15 * 60_000);
    const image = await ensureControlNodeImage(client, state, log);
    log(`control-node image ${image.baked ? `baked in ${image.bakeSeconds} s` : 'from the cache'}, imported in ${image.importSeconds} s`);
    const seen = observe(m);
    cp = await new ControlPlaneDouble().start();
    t = await testCore({ env: { ...o.env }, ...(o.tuning ? { tuning: o.tuning } : {}) });
    attachLocalManager(t.home, { url: m.url, token: TOKEN, stateDir: state });
    await t.call('controlNode.saveSettings', {
      controlPlaneUrl: cp.url,
      agentUrl: `http://${GUEST_HOST_ALIAS}:${GUEST_AGENT_PORT}`,
      token: cp.token,
      agentImage: AGENT_REF,
    });
    const vms = m.vms;
    return {
      m,
      client,
      cp,
      t,
      image,
      state,
      seen,
      userDataOf: (id) => Object.getPrototypeOf(vms).readUserData.call(vms, id),
      consoleTail: (id, lines = 60) => {
        try {
          return vms.consoleTail(id, lines).join('\n');
        } catch (e) {
          return `(no console: ${e instanceof Error ? e.message : String(e)})`;
        }
      },
      processes: () => pidsWith(state),
      close: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** Wraps three VmService methods of this manager to note when they were called; their behaviour is unchanged. */
function observe(m: RunningManager): Seen {
  const seen: Seen = { created: new Map(), fetches: [], userData: [] };
  const vms = m.vms;
  const create = vms.create.bind(vms);
  const read = vms.readUserData.bind(vms);
  const set = vms.setUserData.bind(vms);
  vms.create = (input) => {
    seen.created.set(input.name, Date.now());
    return create(input);
  };
  // The metadata service calls this for each guest GET of /skytap/vms/self/user_data (or /skytap).
  vms.readUserData = (id) => {
    const v = read(id);
    seen.fetches.push({ vmId: id, at: Date.now(), payload: v !== null && v !== '' });
    return v;
  };
  vms.setUserData = (id, userData) => {
    seen.userData.push({ vmId: id, at: Date.now(), set: userData !== null && userData !== '', vmState: vms.get(id).state });
    return set(id, userData);
  };
  return seen;
}

export interface LocalPovRun {
  povId: string;
  /** when pov.create was called, and when the row first read `enrolled` (0: never) */
  t0: number;
  enrolledAt: number;
  create: JobRecord;
  /** the install job the create handed the enrolment wait to (null: none was started) */
  install: JobRecord | null;
  /** the jobs' logs and the control-node VM's console, for a failure message */
  diagnose(): string;
}

/**
 * pov.create {platform: 'local'} and wait for both jobs: the create (VMs, power-on, the payload
 * set) and the control-node install it hands the enrolment wait to. Notes when the POV row first
 * reads `enrolled`, polling every 100 ms.
 */
export async function createLocalPov(w: LocalPovWorld, templateId: string, name: string, controlVm: string): Promise<LocalPovRun> {
  const { t, m } = w;
  const t0 = Date.now();
  const { jobId } = await t.call('pov.create', { platform: 'local', templateId, name });
  let enrolledAt = 0;
  const watch = setInterval(() => {
    const id = t.jobs.get(jobId)?.subject;
    if (id && !enrolledAt && getPov(t.db, id)?.control_node_status === 'enrolled') enrolledAt = Date.now();
  }, 100);
  let installId: string | undefined;
  const diagnose = () => {
    const vm = m.vms.list().find((v) => v.name.endsWith(`-${controlVm}`));
    const tail = [jobId, installId]
      .flatMap((id) => (id ? t.jobs.log(id).map((l) => l.message) : []))
      .slice(-40)
      .join('\n');
    return `${tail}\n--- ${controlVm} console\n${vm ? w.consoleTail(vm.id, 80) : '(no VM)'}`;
  };
  try {
    const create = await t.jobs.wait(jobId);
    const povId = create.subject!;
    installId = t.jobs.list({ subject: povId, includeRoutine: true }).find((j) => j.kind === JOB_KIND.controlNodeInstall)?.id;
    const install = installId ? await t.jobs.wait(installId) : null;
    if (!enrolledAt && getPov(t.db, povId)?.control_node_status === 'enrolled') enrolledAt = Date.now();
    return { povId, t0, enrolledAt, create, install, diagnose };
  } finally {
    clearInterval(watch);
  }
}
