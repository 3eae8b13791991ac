/**
 * What the tray/menu-bar icon and the dock/taskbar progress show, from the app's own lists (VMs,
 * POVs, jobs), decided without Electron. main/electron/desktop.ts turns the model into a Menu.
 */
import type { JobRecord } from '../../shared/contract/core';
import { LIVE_VM_STATES } from '../../shared/vm-states';
import type { VmBrief } from './lifecycle';

export interface PovBrief {
  id: string;
  name: string;
  autoDeleteAt: string | null;
}

/**
 * pov.list's rows as the tray reads them: the auto-delete time only while a deletion is set for it
 * (armed on Skytap, or being armed). A POV whose schedule the sweep did not find (not_armed) will
 * not be deleted at that time, so the tray does not say it will.
 */
export function povBriefs(
  povs: { id: string; name: string; autoDelete?: { at: string | null; status: string | null } | undefined }[],
): PovBrief[] {
  return povs.map((p) => ({
    id: p.id,
    name: p.name,
    autoDeleteAt: p.autoDelete?.at && (p.autoDelete.status === 'armed' || p.autoDelete.status === 'pending') ? p.autoDelete.at : null,
  }));
}

export type TrayItem =
  | { kind: 'header'; label: string }
  | { kind: 'item'; label: string; action: { open: string } | null }
  | { kind: 'separator' }
  | { kind: 'action'; label: string; action: 'open' | 'quit' };

export const NEAR_AUTO_DELETE_MS = 24 * 3600_000;
const MAX_ROWS = 8;

function inTime(ms: number): string {
  return ms >= 3600_000 ? `in ${Math.round(ms / 3600_000)} h` : `in ${Math.max(1, Math.round(ms / 60_000))} min`;
}

const active = (j: JobRecord) => (j.state === 'running' || j.state === 'queued') && !j.routine;

/** The tray menu: running VMs, POVs near auto-delete, jobs in progress, then Open and Quit. */
export function trayModel(o: { vms: VmBrief[]; povs: PovBrief[]; jobs: JobRecord[]; now: number }): { tooltip: string; items: TrayItem[] } {
  const items: TrayItem[] = [];
  const live = o.vms.filter((v) => LIVE_VM_STATES.includes(v.state));
  const soon = o.povs
    .filter(
      (p) => p.autoDeleteAt !== null && Date.parse(p.autoDeleteAt) - o.now <= NEAR_AUTO_DELETE_MS && Date.parse(p.autoDeleteAt) > o.now,
    )
    .sort((a, b) => Date.parse(a.autoDeleteAt!) - Date.parse(b.autoDeleteAt!));
  const jobs = o.jobs.filter(active);
  const section = (title: string, rows: TrayItem[]) => {
    if (rows.length === 0) return;
    items.push({ kind: 'header', label: title }, ...rows.slice(0, MAX_ROWS));
    if (rows.length > MAX_ROWS) items.push({ kind: 'item', label: `… ${rows.length - MAX_ROWS} more`, action: null });
    items.push({ kind: 'separator' });
  };
  section(
    `Running VMs (${live.length})`,
    live.map((v) => ({ kind: 'item', label: `${v.name} — ${v.state}`, action: { open: 'local-vms' } })),
  );
  section(
    `POVs near auto-delete (${soon.length})`,
    soon.map((p) => ({
      kind: 'item',
      label: `${p.name} — deleted ${inTime(Date.parse(p.autoDeleteAt!) - o.now)}`,
      action: { open: `povs/${p.id}` },
    })),
  );
  section(
    `Jobs in progress (${jobs.length})`,
    jobs.map((j) => ({
      kind: 'item',
      label:
        j.title + (j.progress.fraction !== null ? ` — ${Math.round(j.progress.fraction * 100)}%` : j.state === 'queued' ? ' — queued' : ''),
      action: { open: 'jobs' },
    })),
  );
  items.push({ kind: 'action', label: 'Open POV Desk', action: 'open' }, { kind: 'action', label: 'Quit POV Desk', action: 'quit' });
  const parts = [
    live.length && `${live.length} VM${live.length === 1 ? '' : 's'} running`,
    jobs.length && `${jobs.length} job${jobs.length === 1 ? '' : 's'} in progress`,
  ].filter(Boolean);
  return { tooltip: parts.length ? `POV Desk — ${parts.join(', ')}` : 'POV Desk', items };
}

/**
 * The value for BrowserWindow.setProgressBar: -1 removes the bar, 0..1 is the mean progress of the
 * running jobs that report a fraction, 2 (any value > 1) is "indeterminate" when none does.
 */
export function taskbarProgress(jobs: JobRecord[]): number {
  const running = jobs.filter((j) => j.state === 'running' && !j.routine);
  if (running.length === 0) return -1;
  const known = running.map((j) => j.progress.fraction).filter((f): f is number => f !== null);
  if (known.length === 0) return 2;
  return known.reduce((a, b) => a + b, 0) / known.length;
}
