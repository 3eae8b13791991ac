/**
 * What a manager does at start with the VMs a previous one left (vms.ts `recover`): both processes
 * alive → reattached (supervised again, boot timer resumed); a VM being deleted, or a learn boot's
 * VM (it belonged to a learn boot that ended with the manager that ran it) → stopped and removed;
 * anything else → what is left is stopped and the record says what happened.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Launcher } from './launcher';
import { readPid, removePid } from '../lib/procs';
import { errorWithTail, type Supervisor } from './supervision';
import { LIVE, now, upgradeRecord, type VmRecord, type VmRecords } from './vm-record';

export async function recoverVms(o: {
  vmsDir: string;
  recs: VmRecords;
  launcher: Launcher;
  sup: Supervisor;
  bootMs: number;
  /** a guest-initiated reset of a reattached VM (vms.ts starts a new boot) */
  onGuestReset: (id: string) => void;
}): Promise<{ reattached: string[]; cleaned: string[] }> {
  const reattached: string[] = [];
  const cleaned: string[] = [];
  for (const name of readdirSync(o.vmsDir)) {
    const dir = join(o.vmsDir, name);
    if (name.startsWith('.deleted-')) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    let r: VmRecord;
    try {
      r = upgradeRecord(JSON.parse(readFileSync(join(dir, 'vm.json'), 'utf8')) as VmRecord, dir, () => randomBytes(16).toString('hex'));
    } catch {
      continue;
    }
    o.recs.hold(r);
    const qpid = readPid(join(dir, 'qemu.pid')) ?? r.pids.qemu;
    const spid = readPid(join(dir, 'swtpm.pid')) ?? r.pids.swtpm;
    const qAlive = o.launcher.alive(r, 'qemu', qpid);
    const sAlive = o.launcher.alive(r, 'swtpm', spid);
    // A learn boot's VM belongs to the learn boot, which ended with the manager that ran it.
    if (r.state === 'deleting' || r.attestation.learn === true) {
      r.pids = { qemu: qpid, swtpm: spid };
      await o.launcher.stop(r, 0);
      o.recs.forget(r.id);
      rmSync(dir, { recursive: true, force: true });
      cleaned.push(r.id);
      continue;
    }
    if (LIVE.includes(r.state) && qAlive && sAlive) {
      r.pids = { qemu: qpid, swtpm: spid };
      o.recs.save(r);
      o.sup.runtime(r.id).generation++;
      o.sup.supervise(r.id, null, null);
      await o.sup.watchResets(r.id, () => o.onGuestReset(r.id));
      if (r.state === 'booting' || r.state === 'attesting') {
        const elapsed = r.startedAt ? Date.now() - Date.parse(r.startedAt) : 0;
        o.sup.armBootTimer(r.id, o.bootMs - elapsed);
      }
      reattached.push(r.id);
      continue;
    }
    // Anything half-alive is stopped; the record says what happened.
    const wasLive = LIVE.includes(r.state) || r.state === 'creating';
    r.pids = { qemu: qAlive ? qpid : null, swtpm: sAlive ? spid : null };
    if (qAlive || sAlive) await o.launcher.stop(r, 0);
    removePid(join(dir, 'qemu.pid'));
    removePid(join(dir, 'swtpm.pid'));
    if (wasLive || r.state === 'stopping') {
      const why =
        r.state === 'stopping'
          ? null
          : qAlive && !sAlive
            ? 'swtpm was gone when vm-manager restarted, so QEMU was stopped'
            : r.state === 'creating'
              ? 'vm-manager stopped while the VM was being created'
              : 'qemu exited while vm-manager was not running (exit status unknown)';
      r.state = why ? 'failed' : 'stopped';
      r.lastError = why ? errorWithTail(r, why) : r.lastError;
      r.stoppedAt = now();
      r.pids = { qemu: null, swtpm: null };
      r.ports = { ssh: null };
      o.recs.save(r);
      cleaned.push(r.id);
    } else {
      r.pids = { qemu: null, swtpm: null };
    }
  }
  return { reattached, cleaned };
}
