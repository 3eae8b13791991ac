import { listProcs, signal } from '../../main/lib/procs';
import { createLogger } from '../../main/services/log/logger';
import { LocalManagerSupervisor } from '../../main/services/vm/supervisor';

/** Pids of processes other than this one whose command line mentions `marker` (e.g. a state dir). */
export function pidsWith(marker: string): number[] {
  return listProcs()
    .filter((p) => p.pid !== process.pid && p.argv.join(' ').includes(marker))
    .map((p) => p.pid);
}

/**
 * Stops the local vm-manager daemon an app or core started for this home (the supervisor's own
 * stop), then anything still running under it: VMs and learn boots outlive the app and their
 * manager on purpose; a test's must not. A manager the test serves in its own process
 * (test/vm/helpers.ts attachLocalManager writes this pid there) is the test's to close, with its VMs.
 */
export async function stopManager(home: string): Promise<void> {
  const supervisor = new LocalManagerSupervisor({ home, log: createLogger({ dir: null, name: 'test' }) });
  if (supervisor.readEndpoint()?.pid === process.pid) return;
  await supervisor.stop();
  for (const pid of pidsWith(supervisor.stateDir)) signal(pid, 'SIGKILL');
}
