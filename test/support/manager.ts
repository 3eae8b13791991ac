import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listProcs, procCmdline, signal } from '../../main/lib/procs';

/**
 * Stops the local vm-manager daemon an app or core started for this home, then anything still
 * running under it (VMs and learn boots outlive the app and their manager on purpose; a test's
 * must not). Returns at once when no manager was started there, and leaves alone a manager the
 * test serves in its own process (test/vm/helpers.ts attachLocalManager writes this pid there).
 */
export async function stopManager(home: string): Promise<void> {
  const marker = join(home, 'vm-manager');
  const ep = join(marker, 'endpoint.json');
  if (!existsSync(ep)) return;
  let pid: number;
  try {
    pid = (JSON.parse(readFileSync(ep, 'utf8')) as { pid: number }).pid;
  } catch {
    return; // unreadable: nobody wrote a whole endpoint
  }
  if (pid === process.pid) return;
  const argv = (procCmdline(pid) ?? []).join(' ');
  if (argv.includes(' serve') && argv.includes(marker)) {
    signal(pid, 'SIGTERM');
    // gone, or a zombie its parent has not reaped: up to 5 s
    for (let waited = 0; procCmdline(pid) !== null && waited < 5000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  }
  for (const p of listProcs()) if (p.pid !== process.pid && p.argv.join(' ').includes(marker)) signal(p.pid, 'SIGKILL');
}
