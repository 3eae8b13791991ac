/**
 * Pieces the vm suites share: what the host must have, a home and its manager. (Their core:
 * test/support/core.ts; process checks: test/support/manager.ts.)
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endpointSchema } from '../../main/services/vm/supervisor';
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

export function removeHome(home: string) {
  rmSync(home, { recursive: true, force: true });
}

/**
 * Makes a core over `home` take the manager at `url` (a double of it, or the daemon's handler with a
 * fake launcher) as its local vm-manager, by the supervisor's own reattach path: an endpoint.json
 * (0600) whose pid lives (this test process) and whose manager answers the token. Write it before
 * the core's first vm call; `stateDir` is what the endpoint reports (default: the supervisor's).
 */
export function attachLocalManager(home: string, ep: { url: string; token: string; stateDir?: string }): void {
  const dir = join(home, 'vm-manager');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const record = endpointSchema.parse({
    url: ep.url,
    token: ep.token,
    pid: process.pid,
    stateDir: ep.stateDir ?? dir,
    startedAt: new Date().toISOString(),
  });
  writeFileSync(join(dir, 'endpoint.json'), JSON.stringify(record), { mode: 0o600 });
}
