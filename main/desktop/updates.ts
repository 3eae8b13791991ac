/**
 * When the app checks for updates and when it may offer "restart to update": never in development
 * (an unpackaged app, or POVDESK_NO_UPDATES=1), and never while a job runs, because restarting
 * would interrupt it; the offer waits until the last job ends. main/electron/updates.ts wires
 * electron-updater to these decisions.
 */
import type { JobRecord } from '../../shared/contract/core';

export function updatesEnabled(o: { isPackaged: boolean; env: NodeJS.ProcessEnv }): { enabled: boolean; reason: string } {
  if (!o.isPackaged) return { enabled: false, reason: 'development build: updates are off' };
  if (o.env.POVDESK_NO_UPDATES === '1') return { enabled: false, reason: 'POVDESK_NO_UPDATES=1' };
  return { enabled: true, reason: 'packaged build' };
}

export const CHECK_EVERY_MS = 6 * 3600_000;
export const REMIND_AFTER_MS = 24 * 3600_000;

export interface UpdateState {
  /** The version downloaded and ready to install, or null. */
  ready: string | null;
  /** When the user last answered "Later" for this version. */
  laterAt: number | null;
}

const busy = (jobs: JobRecord[]) => jobs.filter((j) => j.state === 'running' || j.state === 'queued');

/** What to do now: offer the restart, wait (with why), or nothing. */
export function updateAction(
  s: UpdateState,
  jobs: JobRecord[],
  now: number,
): { kind: 'none' } | { kind: 'wait'; why: string } | { kind: 'offer'; version: string } {
  if (!s.ready) return { kind: 'none' };
  const b = busy(jobs);
  if (b.length > 0)
    return {
      kind: 'wait',
      why:
        `${b.length} job${b.length === 1 ? '' : 's'} in progress (${b[0]!.title}${b.length > 1 ? ', …' : ''}); the update waits ` +
        `until they finish`,
    };
  if (s.laterAt !== null && now - s.laterAt < REMIND_AFTER_MS) return { kind: 'wait', why: 'the user chose Later' };
  return { kind: 'offer', version: s.ready };
}

/** After the user clicked "Restart now": install only if still no job runs (one may have started while the dialog was open). */
export function mayRestartNow(jobs: JobRecord[]): boolean {
  return busy(jobs).length === 0;
}
