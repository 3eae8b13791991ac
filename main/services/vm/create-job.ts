/**
 * The vm.create job: POST /vms with wait_for none, then the VM followed by polling to the milestone
 * the caller waits for (so a proxy's 504 or a dropped connection never loses a VM or makes a second
 * one); a cancel deletes the half-made VM.
 */
import { AppError } from '../../../shared/contract/errors';
import type { VmCreateArgs, VmRecord } from '../../../shared/contract/vm';
import { sleep } from '../../lib/sleep';
import type { Loose, VmManagerClient } from '../../vm-api/client';
import type { ApiVm } from '../../vm-api/schemas';
import type { JobContext, JobRunner } from '../jobs/runner';

/** What the jobs need of the ConnectedVmManager (./service): its calls, and what it tells vm.updated. */
export interface ManagerCalls {
  /** One call to the manager, its failure mapped to an AppError (retried once when the local manager went away). */
  call<T>(what: string, fn: (c: VmManagerClient) => Promise<T>): Promise<T>;
  raw(id: string): Promise<Loose<ApiVm>>;
  view(v: Loose<ApiVm>): VmRecord;
  delete(id: string): Promise<void>;
  /** Tells vm.updated's followers about a VM the job saw. */
  saw(vm: VmRecord): void;
}

const STEP: Record<string, number> = { creating: 0.1, installing: 0.2, booting: 0.3, attesting: 0.6, ready: 1 };
/** Errors after which the VM may well exist (a proxy timed out, the connection dropped): look, do not give up. */
const MAYBE_DONE = new Set(['timeout', 'unavailable']);

/** The create job: POST /vms (wait_for none), then follow the VM's states to args.waitFor. */
export function startCreateJob(jobs: JobRunner, m: ManagerCalls, args: VmCreateArgs, pollMs = 500): string {
  const waitFor = args.waitFor ?? 'ready';
  return jobs.start({ kind: 'vm.create', title: `Create VM ${args.name}`, subject: `vm:${args.name}` }, (job) =>
    createWork(m, job, args, waitFor, pollMs),
  );
}

/**
 * POST /vms with wait_for none. When the answer is lost (a proxy's 504, a dropped connection) the
 * VM may exist anyway: look it up by name before failing, so it is followed, not lost or doubled.
 */
async function createCall(m: ManagerCalls, job: JobContext, args: VmCreateArgs): Promise<string> {
  try {
    const created = await m.call('POST /vms', (c) =>
      c.create({
        name: args.name,
        image: args.image,
        cpus: args.cpus,
        memory_mib: args.memoryMib,
        disk_gib: args.diskGib,
        ...(args.userData !== undefined ? { user_data: args.userData } : {}),
        require_attestation: args.requireAttestation,
        wait_for: 'none',
        // 'restricted' is the manager's default network; the local daemon names its NAT policy network 'nat'
        ...(args.network === 'nat' ? { network: 'nat' } : {}),
      }),
    );
    job.log(`VM ${args.name} is ${created.id} (${created.state})`);
    return created.id;
  } catch (e) {
    if (!MAYBE_DONE.has((e as AppError).code)) throw e;
    job.log(`POST /vms got no answer (${(e as Error).message}); looking for VM ${args.name}`, 'warn');
    const found = await m.call('GET /vms', async (c) => (await c.list()).find((v) => v.name === args.name));
    if (!found) throw e;
    job.log(`VM ${args.name} exists after all: ${found.id} (${found.state})`);
    return found.id;
  }
}

async function createWork(
  m: ManagerCalls,
  job: JobContext,
  args: VmCreateArgs,
  waitFor: 'none' | 'attested' | 'ready',
  pollMs: number,
): Promise<{ vm: VmRecord }> {
  job.progress('creating', 0.05, `asking the vm-manager to create ${args.name}`);
  const id = await createCall(m, job, args);
  let last = '';
  let lastNote = '';
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    if (job.signal.aborted) {
      // A half-made VM is of no use: delete it rather than leave it booting.
      try {
        await m.delete(id);
        job.log(`cancelled: deleted the half-made VM ${args.name} (${id})`, 'warn');
      } catch (e) {
        job.log(`cancelled, but deleting VM ${id} failed: ${(e as Error).message}; delete it from the list`, 'error');
        throw new AppError('cancelled', `cancelled; VM ${args.name} (${id}) could not be deleted: ${(e as Error).message}`);
      }
      throw new AppError('cancelled', `cancelled; the half-made VM ${args.name} (${id}) was deleted`);
    }
    let vm: Loose<ApiVm>;
    try {
      vm = await m.raw(id);
    } catch (e) {
      // A proxy's 504 or a dropped connection while the VM boots: the VM is still there, ask again.
      if (!MAYBE_DONE.has((e as AppError).code) || Date.now() > deadline) throw e;
      job.log(`reading VM ${id} failed (${(e as Error).message}); trying again`, 'warn');
      await sleep(pollMs, job.signal).catch(() => undefined);
      continue;
    }
    m.saw(m.view(vm));
    if (vm.state !== last) {
      last = vm.state;
      job.log(`${id}: ${vm.state}`);
    }
    const fraction = STEP[vm.state] ?? null;
    const initrd = vm.attestation.initrd;
    const note =
      vm.state !== 'attesting'
        ? vm.state
        : !initrd
          ? 'waiting for the initrd quote'
          : initrd.verified
            ? 'initrd quote verified; waiting for ready'
            : `initrd quote rejected: ${initrd.message}. The guest keeps retrying until the boot timeout; cancel to delete the VM`;
    if (`${vm.state}|${note}` !== lastNote) {
      lastNote = `${vm.state}|${note}`;
      job.progress(vm.state, fraction, note);
    }
    const reached =
      waitFor === 'none' ||
      (waitFor === 'attested' && vm.bootedAt !== null && vm.attestation.userDataReleased) ||
      (waitFor === 'ready' && vm.state === 'ready');
    if (reached) return { vm: m.view(vm) };
    if (vm.state === 'failed' || vm.state === 'stopped' || vm.state === 'deleting') {
      throw new AppError(
        'unavailable',
        `VM ${args.name} (${id}) is ${vm.state} before "${waitFor}": ${vm.lastError ?? 'no error recorded'}`,
        { vmId: id },
      );
    }
    if (vm.state === 'running' && waitFor === 'ready') {
      throw new AppError(
        'timeout',
        `VM ${args.name} (${id}) did not report ready within the manager's boot timeout and keeps running: ${vm.lastError ?? ''}` +
          ' — see its console, or delete it',
        { vmId: id },
      );
    }
    if (Date.now() > deadline)
      throw new AppError('timeout', `VM ${args.name} (${id}) did not reach "${waitFor}" in 15 minutes; it keeps running`, { vmId: id });
    await sleep(pollMs, job.signal).catch(() => undefined);
  }
}
