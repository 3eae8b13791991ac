/** Pieces the vm suites share: what the host must have, process checks. (Their core: test/support/core.ts.) */
import { readdirSync, rmSync } from 'node:fs';
import { listProcs } from '../../main/lib/procs';
import { needs } from '../support/system';

export const VM_SYSTEM = ['qemu-system-x86_64', 'qemu-img', 'swtpm', 'tpm2_quote', '/bin/busybox', '/usr/share/OVMF/OVMF_CODE_4M.fd'];

export function vmSkip(): string | null {
  const r = needs(VM_SYSTEM);
  if (r) return r;
  const kernels = readdirSync('/boot').filter((f) => /^vmlinuz-.*-cloud-amd64$/.test(f));
  if (kernels.length === 0) {
    const reason = 'no /boot/vmlinuz-*-cloud-amd64 (apt-get install linux-image-cloud-amd64)';
    if (process.env.CI === 'true') throw new Error(reason);
    return reason;
  }
  return null;
}

/** Pids of processes whose command line mentions `marker` (e.g. a state dir). */
export function processesWith(marker: string): number[] {
  return listProcs()
    .filter((p) => p.pid !== process.pid && p.argv.join(' ').includes(marker))
    .map((p) => p.pid);
}

export function removeHome(home: string) {
  rmSync(home, { recursive: true, force: true });
}
