/**
 * "Save clean state" and "Reset to clean state" of one VM: its disk (a qcow2 internal snapshot, so
 * saving costs no copy of the disk), its vTPM state (the swtpm directory: the AK the manager made
 * stays the same, so the VM attests again after a reset), its firmware variables and, when saved
 * from a running VM, its memory (QEMU's migration stream to a file, which carries the devices and
 * the vTPM's volatile state: a reset resumes it instead of booting). Kept in <vm>/clean/ with
 * meta.json; a new save is written beside the old one and swapped in by a rename, so a crash
 * leaves one whole clean state, never half of two.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { VmmError } from './errors';
import { findTool } from './finders';
import type { VmRecord } from './vm-record';

interface CleanMeta {
  at: string;
  /** the disk's internal snapshot, null for a VM without a disk */
  diskTag: string | null;
  /** memory.bin holds the memory (older saves: absent, none) */
  memory?: boolean;
  /** whether the VM had its Internet NIC at the save: a resume needs the same devices */
  internet?: boolean;
}

/** What a reset put back: when it was saved, and the memory to resume from (null: boot the disks). */
export interface Restored {
  at: string;
  memory: string | null;
  internet: boolean;
}

const cleanDir = (r: VmRecord) => join(r.paths.dir, 'clean');
/** Where QEMU writes the memory before saveClean takes it in. */
export const memoryStaging = (r: VmRecord) => join(r.paths.dir, 'clean-memory.saving');

function qemuImg(args: string[]) {
  execFileSync(findTool('qemu-img') ?? 'qemu-img', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function readMeta(r: VmRecord): CleanMeta | null {
  try {
    return JSON.parse(readFileSync(join(cleanDir(r), 'meta.json'), 'utf8')) as CleanMeta;
  } catch {
    return null;
  }
}

/** The swtpm state without its socket. */
const tpmFiles = (src: string) => basename(src) !== 'swtpm.sock';

/** Saves the stopped VM's files, with the memory QEMU wrote to memoryStaging(r) before it stopped when `memory`. */
export function saveClean(r: VmRecord, o: { memory: boolean; internet: boolean } = { memory: false, internet: false }): string {
  const at = new Date().toISOString();
  const old = readMeta(r);
  const tmp = `${cleanDir(r)}.saving`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const diskTag = r.paths.disk && existsSync(r.paths.disk) ? `povdesk-clean-${Date.now()}` : null;
  try {
    cpSync(r.paths.tpmState, join(tmp, 'tpm'), { recursive: true, filter: tpmFiles });
    copyFileSync(r.paths.ovmfVars, join(tmp, 'OVMF_VARS.fd'));
    if (o.memory) renameSync(memoryStaging(r), join(tmp, 'memory.bin'));
    if (diskTag) qemuImg(['snapshot', '-c', diskTag, r.paths.disk!]);
    writeFileSync(join(tmp, 'meta.json'), JSON.stringify({ at, diskTag, memory: o.memory, internet: o.internet } satisfies CleanMeta));
    rmSync(cleanDir(r), { recursive: true, force: true });
    renameSync(tmp, cleanDir(r));
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    rmSync(memoryStaging(r), { force: true });
    throw new VmmError('internal', `could not save VM ${r.id}'s clean state: ${e instanceof Error ? e.message : String(e)}`);
  }
  // The previous save's disk snapshot is no longer named by any meta.json.
  if (old?.diskTag && r.paths.disk) {
    try {
      qemuImg(['snapshot', '-d', old.diskTag, r.paths.disk]);
    } catch {
      /* already gone */
    }
  }
  return at;
}

/** Puts the saved disk, vTPM state and firmware variables back; says what a resume may use. */
export function restoreClean(r: VmRecord): Restored {
  const meta = readMeta(r);
  if (!meta)
    throw new VmmError(
      'conflict',
      `VM ${r.id} has no clean state: save one first (POST /vms/${r.id}/povdesk/save-clean while it is stopped)`,
    );
  try {
    if (meta.diskTag && r.paths.disk) qemuImg(['snapshot', '-a', meta.diskTag, r.paths.disk]);
    const tpmTmp = `${r.paths.tpmState}.restoring`;
    rmSync(tpmTmp, { recursive: true, force: true });
    cpSync(join(cleanDir(r), 'tpm'), tpmTmp, { recursive: true });
    rmSync(r.paths.tpmState, { recursive: true, force: true });
    renameSync(tpmTmp, r.paths.tpmState);
    copyFileSync(join(cleanDir(r), 'OVMF_VARS.fd'), r.paths.ovmfVars);
  } catch (e) {
    throw new VmmError('internal', `could not reset VM ${r.id} to its clean state: ${e instanceof Error ? e.message : String(e)}`);
  }
  const memory = join(cleanDir(r), 'memory.bin');
  return { at: meta.at, memory: meta.memory && existsSync(memory) ? memory : null, internet: meta.internet ?? false };
}
