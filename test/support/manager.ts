import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listProcs, procCmdline, signal } from '../../main/lib/procs';

/**
 * Stops the local vm-manager an app or core started for this home, then anything still running
 * under it (VMs and learn boots outlive the app and their manager on purpose; a test's must not).
 * Returns at once when nothing runs there.
 */
export async function stopManager(home: string): Promise<void> {
  const ep = join(home, 'vm-manager', 'endpoint.json');
  if (existsSync(ep)) {
    let pid = 0;
    try {
      pid = (JSON.parse(readFileSync(ep, 'utf8')) as { pid: number }).pid;
      process.kill(pid, 'SIGTERM');
    } catch {
      pid = 0; // unreadable, or already gone
    }
    // gone, or a zombie its parent has not reaped: up to 5 s
    for (let waited = 0; pid && procCmdline(pid) !== null && waited < 5000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  }
  const marker = join(home, 'vm-manager');
  for (const p of listProcs()) if (p.argv.join(' ').includes(marker)) signal(p.pid, 'SIGKILL');
}
