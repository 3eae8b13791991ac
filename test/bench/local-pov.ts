// Local POV: create → control node enrolled, against the sum of its parts measured in the same run.
// One POV from a one-VM local template (the baked Debian control node, test/lab/control-node-image.ts)
// through the app's real core with its shipped polls, the real vm-manager (TCG here), the
// control-plane double (test/lab/local-pov-world.ts). The parts:
//  - the control-node VM's boot alone: the manager asked to create it → the runner in the guest
//    first reads its user_data (seen at the manager's metadata service);
//  - the runner's poll interval: the shipped runner's (main/services/control-node/runner.ts);
//  - the agent start: the guest reads the payload → the agent's enrol request at the double.
// Ratio total / (boot + interval + agent start), target ≤ 1.2. What the ratio leaves out is the
// app's own time: the create request, its environment and enrolment polls, the install's steps.
// One round: a TCG boot of Debian takes minutes on a shared 2-core machine; the budget is 300 s.
// The image comes from the test suites' cache (warm after `npx vitest run test/lab`); a cold cache
// bakes it first, which alone passes the budget: the bench says so.
import { runnerScript } from '../../main/services/control-node/runner';
import { getPov } from '../../main/services/pov/repo';
import { CONTROL_NODE_IMAGE } from '../lab/control-node-image';
import { createLocalPov, localPovWorld } from '../lab/local-pov-world';
import { needs } from '../support/system';
import { vmSkip } from '../vm-manager/support';

const skip = vmSkip() ?? needs(['mmdebstrap', 'guestfish']);
if (skip) {
  console.log(`bench local-pov: skipped (${skip})`);
  process.exit(0);
}
const s = (ms: number) => (ms / 1000).toFixed(1);
const interval = Number(/^EVERY=(\d+)$/m.exec(runnerScript().script)?.[1]);
if (!Number.isInteger(interval)) throw new Error('cannot read the shipped runner interval (EVERY=) from runner.ts');

const began = Date.now();
const w = await localPovWorld({ log: (l) => console.log(`bench local-pov: ${l}`) });
let failed = false;
try {
  const { t, m, cp, seen } = w;
  const { template } = await t.call('labTemplates.create', {
    name: 'Bench control node',
    vms: [
      { name: 'control-node', image: CONTROL_NODE_IMAGE, os: 'linux', cpus: 2, memoryMib: 2048, diskGib: 8, requireAttestation: false },
    ],
  });
  const run = await createLocalPov(w, template.id, 'Bench local POV', 'control-node');
  const { t0, enrolledAt } = run;
  const vm = m.vms.list()[0];
  const status = getPov(t.db, run.povId)?.control_node_status;
  if (run.create.state !== 'succeeded' || run.install?.state !== 'succeeded' || status !== 'enrolled' || !enrolledAt || !vm) {
    throw new Error(
      `the POV did not reach an enrolled control node (create ${run.create.state}, install ${run.install?.state ?? 'none'}, ` +
        `control node ${status})\n${run.diagnose()}`,
    );
  }
  const total = enrolledAt - t0;
  const created = seen.created.get(vm.name)!;
  const firstRead = seen.fetches.find((f) => f.vmId === vm.id);
  const payloadRead = seen.fetches.find((f) => f.vmId === vm.id && f.payload);
  const redeemed = cp.redemptions.find((r) => r.status === 200);
  const set = seen.userData.find((u) => u.vmId === vm.id && u.set);
  if (!firstRead || !payloadRead || !redeemed || !set)
    throw new Error('a moment of the chain was not observed (first read, payload read, enrol request or user-data set)');
  const boot = firstRead.at - created;
  const agent = redeemed.at - payloadRead.at;
  const parts = boot + interval * 1000 + agent;
  const ratio = total / parts;
  console.log(
    `bench local-pov create-to-enrolled: ${s(total)} s vs parts ${s(parts)} s ` +
      `(boot to the runner's first read ${s(boot)} s + runner interval ${interval} s + agent start ${s(agent)} s) ` +
      `ratio ${ratio.toFixed(3)} target 1.2`,
  );
  console.log(
    `bench local-pov timeline from pov.create: VM create asked ${s(created - t0)} s, runner's first read ${s(firstRead.at - t0)} s, ` +
      `payload set ${s(set.at - t0)} s, payload read ${s(payloadRead.at - t0)} s, enrol request ${s(redeemed.at - t0)} s, row ` +
      `enrolled ${s(total)} s`,
  );
  // Whether the interval was paid: a payload set before the runner's first read is run at once.
  const paid = set.at > firstRead.at;
  console.log(
    `bench local-pov runner interval ` +
      (paid ? "paid: the payload was set after the runner's first read" : "not paid: the payload was set before the runner's first read") +
      '; ' +
      `total / (boot + agent start) ${(total / (boot + agent)).toFixed(3)} (the app's own share: create request, polls, install steps)`,
  );
  if (ratio > 1.2) console.log(`bench local-pov: TARGET NOT MET: ${ratio.toFixed(3)} > 1.2`);
  const t1 = Date.now();
  const d = await t.jobs.wait((await t.call('pov.destroy', { id: run.povId })).jobId);
  console.log(`bench local-pov destroy: ${s(Date.now() - t1)} s (${d.state}); whole bench ${s(Date.now() - began)} s`);
} catch (err) {
  failed = true;
  console.log(`bench local-pov: failed: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await w.close();
}
process.exit(failed ? 1 : 0);
