/**
 * A VM's clean state (issue 34) as the VM service runs it: "Save clean state" of a ready VM saves
 * its memory too (QEMU's migration stream to a file) and resumes it from that save; of a stopped
 * VM, the disk, vTPM state and firmware variables alone. "Reset to clean state" puts the files
 * back (snapshots.ts) and resumes the saved memory, else leaves the VM stopped for a cold boot of
 * the saved disks; the record says which (`lastReset`) and why. A resumed guest is past its boot:
 * its user-data is withheld again and it is ready only once a fresh quote (a new nonce, over the
 * restored vTPM's PCRs) verifies: the manager has the guest run guest-quote.sh's ready stage over
 * its SSH, as exec does; then its clock is set to the host's (the saved memory holds the clock of
 * the save, hours or days behind by the demo).
 */
import { readFileSync, rmSync } from 'node:fs';
import { GUEST_NET } from './argv';
import { GUEST_QUOTE_SCRIPT } from './attest/index';
import { VmmError } from './errors';
import { sshRun } from './exec';
import { sleep } from '../lib/sleep';
import { memoryStaging, restoreClean, saveClean } from './snapshots';
import type { Launcher } from './launcher';
import { LIVE, now, type VmRecord, type VmRecords } from './vm-record';

/** What the VM service lends the clean-state steps. */
export interface CleanHost {
  recs: VmRecords;
  launcher: Launcher;
  /** ends QEMU at once (the guest is paused or about to be discarded); the VM ends stopped */
  halt(id: string): Promise<void>;
  /** a clean powerdown */
  stop(id: string): Promise<unknown>;
  start(id: string): Promise<unknown>;
  /** starts QEMU on the saved memory (throws as start does when QEMU cannot) */
  resume(id: string, memory: string): Promise<void>;
  /** whether a start now gives the VM its Internet NIC */
  internet(r: VmRecord): boolean;
}

export async function saveCleanState(h: CleanHost, id: string): Promise<VmRecord> {
  const r = h.recs.get(id);
  if (r.state === 'stopped' || r.state === 'failed') {
    const at = saveClean(r);
    return h.recs.update(id, (v) => {
      v.cleanAt = at;
      v.cleanMemory = false;
      v.cleanNote = 'saved while stopped: a reset boots the saved disks';
    });
  }
  if (r.state !== 'ready')
    throw new VmmError(
      'conflict',
      `VM ${id} is ${r.state}; save its clean state once it is ready (with its memory) or while it is stopped`,
    );
  let note: string | null = null;
  const internet = h.internet(r);
  if (!h.launcher.saveMemory) note = 'this vm-manager cannot save memory: a reset boots the saved disks';
  else {
    try {
      await h.launcher.saveMemory(r, memoryStaging(r));
    } catch (e) {
      rmSync(memoryStaging(r), { force: true });
      note = `the memory could not be saved (${e instanceof Error ? e.message : String(e)}): a reset boots the saved disks`;
    }
  }
  // A completed save leaves the guest paused with its disks flushed: QEMU ends at once. Otherwise it powers down.
  if (note === null) await h.halt(id);
  else await h.stop(id);
  const at = saveClean(h.recs.get(id), { memory: note === null, internet });
  h.recs.update(id, (v) => {
    v.cleanAt = at;
    v.cleanMemory = note === null;
    v.cleanNote = note;
  });
  // The VM runs on from what was just saved (re-attesting), or boots its disks.
  const resumeFailed = note === null ? await resumeOrStay(h, id, restoreClean(h.recs.get(id)).memory!) : null;
  if (note !== null || resumeFailed !== null) await h.start(id);
  return h.recs.get(id);
}

/** Puts the clean state back: resumed from its memory when it has one, else stopped (a start boots the saved disks). */
export async function resetCleanState(h: CleanHost, id: string): Promise<VmRecord> {
  const r = h.recs.get(id);
  if (r.state !== 'stopped' && r.state !== 'failed' && !LIVE.includes(r.state))
    throw new VmmError('conflict', `VM ${id} is ${r.state}; reset it once it runs or is stopped`);
  if (LIVE.includes(r.state)) await h.halt(id); // what it holds now is thrown away
  const restored = restoreClean(h.recs.get(id));
  let note: string | null = null;
  if (!restored.memory) note = h.recs.get(id).cleanNote ?? 'the clean state has no memory: start boots the saved disks';
  else if (restored.internet !== h.internet(r))
    note = "Internet access changed since the save, so the VM's devices differ from the saved memory: start boots the saved disks";
  else note = await resumeOrStay(h, id, restored.memory);
  return h.recs.update(id, (v) => (v.lastReset = { at: now(), memory: note === null, note }));
}

/** Resumes; when QEMU cannot, puts the files back again and leaves the VM stopped, saying why. */
async function resumeOrStay(h: CleanHost, id: string, memory: string): Promise<string | null> {
  try {
    await h.resume(id, memory);
    return null;
  } catch (e) {
    restoreClean(h.recs.get(id));
    h.recs.update(id, (v) => {
      v.state = 'stopped';
      v.lastError = null;
    });
    return `resuming the saved memory failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)}): start boots the saved disks`;
  }
}

/**
 * The resumed guest's fresh ready-stage quote: guest-quote.sh (the manager's copy, sent as the
 * command) asks the metadata service for a nonce and posts a quote of the image policy's ready
 * PCRs; the phase words are not extended again (the guest's /run/attest markers survived in its
 * memory). Retries the SSH connection while the guest's network settles and `still` holds (this boot
 * of the VM is live). Returns why not, or null.
 */
export async function quoteAfterResume(
  r: VmRecord,
  pcrs: number[] | null,
  deadlineMs: number,
  still: () => boolean,
): Promise<string | null> {
  const script = readFileSync(GUEST_QUOTE_SCRIPT, 'utf8');
  const cmd = [
    'env',
    ...(pcrs ? [`ATTEST_PCRS=${pcrs.join(',')}`] : []),
    'sh',
    '-c',
    script,
    'guest-quote.sh',
    'ready',
    GUEST_NET.metadata,
    '80',
  ];
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      const out = await sshRun(r, cmd, Math.max(10_000, end - Date.now()));
      return out.exitCode === 0
        ? null
        : `guest-quote.sh exited ${out.exitCode}: ${(out.stderr.trim() || out.stdout.trim()).split('\n').slice(-2).join(' ')}`;
    } catch (e) {
      if (Date.now() > end) return `the guest did not answer over SSH: ${e instanceof Error ? e.message : String(e)}`;
      await sleep(1000);
      if (!still()) return 'the VM was stopped, reset or deleted meanwhile';
    }
  }
}

/**
 * Sets a resumed guest's clock to the host's over its SSH (`date -u -s @<seconds>`, which busybox
 * and coreutils both take): the saved memory holds the clock of the save, and a guest hours or days
 * behind breaks TLS, Kerberos and its logs' times. Returns why not, or null.
 */
export async function setGuestClock(r: VmRecord): Promise<string | null> {
  try {
    const out = await sshRun(r, ['date', '-u', '-s', `@${Math.round(Date.now() / 1000)}`], 10_000);
    return out.exitCode === 0 ? null : `date -s exited ${out.exitCode}: ${out.stderr.trim().split('\n')[0]}`;
  } catch (e) {
    return `the guest did not answer over SSH: ${e instanceof Error ? e.message : String(e)}`;
  }
}
