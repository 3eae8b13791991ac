/**
 * A manager the app's supervisor started exits once it serves nothing and the POV Desk process
 * that owns the data directory is gone (`serve --exit-unowned <owner.json>`). One-shot CLI calls
 * (`povdesk call bake.start … --wait`, `vm.host`) used to leave one `vm-manager serve` each,
 * idle, for good. The app (or `povdesk serve`) owning the directory keeps its manager; running VMs
 * keep theirs (they are reattached by the next manager anyway, but while they run it supervises
 * them). A grace lets a following call reuse the manager instead of starting another.
 *
 * The owner is read from `<home>/owner.json` (main/core/owner.ts writes it; only its pid is read
 * here): gone when the file is missing or no process has its pid.
 */
import { readFileSync } from 'node:fs';
import { pidExists } from '../lib/procs';
import type { VmRecord } from './vm-record';

/** How long a manager stays with nothing to serve and no owner (POVDESK_VMM_UNOWNED_GRACE_MS overrides). */
export const UNOWNED_GRACE_MS = 60_000;

/** States in which the manager has nothing of the VM to supervise. */
const RESTING: VmRecord['state'][] = ['stopped', 'failed'];

/**
 * The pid owner.json names, while a process with that pid runs. Not its name: the packaged app's
 * binary may be called anything. A reused pid only keeps the manager a while longer.
 */
export function liveOwnerPid(ownerFile: string): number | null {
  let pid: unknown;
  try {
    pid = (JSON.parse(readFileSync(ownerFile, 'utf8')) as { pid?: unknown }).pid;
  } catch {
    return null;
  }
  return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 && pidExists(pid) ? pid : null;
}

/** Why the manager must stay, or null when it serves nothing and nobody owns the directory. */
export function reasonToStay(o: { vms: VmRecord[]; requests: number; ownerFile: string }): string | null {
  const busy = o.vms.filter((v) => !RESTING.includes(v.state));
  if (busy.length) return `${busy.length} VM(s) not stopped`;
  if (o.requests > 0) return `${o.requests} request(s) in flight`;
  const owner = liveOwnerPid(o.ownerFile);
  return owner ? `owner pid ${owner} runs` : null;
}

/**
 * Checks every `checkMs`; once reasonToStay has been null for `graceMs` on end, calls `exit` (once).
 * Returns a stop function.
 */
export function exitWhenUnowned(o: {
  ownerFile: string;
  vms: () => VmRecord[];
  requests: () => number;
  graceMs: number;
  checkMs?: number;
  exit: (why: string) => void;
}): () => void {
  let idleSince: number | null = null;
  const timer = setInterval(
    () => {
      if (reasonToStay({ vms: o.vms(), requests: o.requests(), ownerFile: o.ownerFile })) {
        idleSince = null;
        return;
      }
      idleSince ??= Date.now();
      if (Date.now() - idleSince < o.graceMs) return;
      clearInterval(timer);
      o.exit(`no VM to supervise and the owner of the data directory is gone (${o.ownerFile}) for ${Math.round(o.graceMs / 1000)} s`);
    },
    o.checkMs ?? Math.max(100, Math.min(2000, Math.floor(o.graceMs / 4))),
  );
  timer.unref();
  return () => clearInterval(timer);
}
