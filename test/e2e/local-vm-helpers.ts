import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listProcs, signal } from '../../main/lib/procs';

/** Stops the manager the app started for this home, then anything still running under it (VMs outlive the app and their manager on purpose). */
export async function stopManager(home: string): Promise<void> {
  const ep = join(home, 'vm-manager', 'endpoint.json');
  if (existsSync(ep)) {
    try {
      process.kill((JSON.parse(readFileSync(ep, 'utf8')) as { pid: number }).pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await new Promise((r) => setTimeout(r, 2000));
  const marker = join(home, 'vm-manager');
  for (const p of listProcs()) if (p.argv.join(' ').includes(marker)) signal(p.pid, 'SIGKILL');
}

const HOST_TOOLS = ['/usr/bin/qemu-system-x86_64', '/usr/bin/swtpm', '/usr/share/OVMF/OVMF_CODE_4M.fd', '/bin/busybox'];
/** What the local-VM specs need on the host; under CI=true a missing piece fails them instead. */
export const missingHostTools = HOST_TOOLS.filter((p) => !existsSync(p));
