import type { Db } from '../store/db';
import type { NotificationService } from './service';

/**
 * The auto-delete warning ladder (the courtesy; Skytap's delete_at_end schedule is the guarantee).
 * Steps are hours before deletion (default 7 d, 3 d, 24 h, 1 h). Each step fires exactly once per
 * POV and deletion time: ladder_steps is keyed (pov, delete_at, step) and written in the same
 * transaction that decides to fire, so a restart never fires it again. When several steps are
 * due at once (the app was closed) only the latest fires; the earlier ones are recorded as
 * skipped. Moving the deletion time changes the key, which re-arms the whole ladder.
 */

export function stepLabel(hours: number): string {
  return hours % 24 === 0 && hours >= 48 ? `${hours / 24}d` : `${hours}h`;
}

export function inWords(hours: number): string {
  if (hours % 24 === 0 && hours >= 48) return `${hours / 24} days`;
  return hours === 1 ? '1 hour' : `${hours} hours`;
}

/** What is left, as a person says it: days from 48 h, hours from 90 min, else minutes. */
export function leftInWords(ms: number): string {
  if (ms >= 48 * 3600_000) return `${Math.round(ms / 86_400_000)} days`;
  if (ms >= 90 * 60_000) return `${Math.round(ms / 3600_000)} hours`;
  const m = Math.max(1, Math.round(ms / 60_000));
  return m === 1 ? '1 minute' : `${m} minutes`;
}

/** The steps already due at `now` for this deletion time, latest (smallest) first. */
export function dueSteps(now: Date, deleteAt: Date, hours: readonly number[]): number[] {
  if (now.getTime() >= deleteAt.getTime()) return [];
  return [...hours].filter((h) => deleteAt.getTime() - h * 3600_000 <= now.getTime()).sort((a, b) => a - b);
}

/** The next step still ahead of `now` (for pov.get), or null. */
export function nextStep(now: Date, deleteAt: Date, hours: readonly number[]): { step: string; at: string } | null {
  // The earliest ahead is the largest number of hours before deletion.
  const ahead = [...hours].filter((h) => deleteAt.getTime() - h * 3600_000 > now.getTime()).sort((a, b) => b - a);
  const h = ahead[0];
  return h === undefined ? null : { step: stepLabel(h), at: new Date(deleteAt.getTime() - h * 3600_000).toISOString() };
}

export interface LadderDeps {
  db: Db;
  notify: NotificationService;
  now?: () => Date;
}

export interface FiredStep {
  povId: string;
  step: string;
  deleteAt: string;
  skipped: string[];
}

export class Ladder {
  constructor(private readonly deps: LadderDeps) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** The last step that fired for the POV's current deletion time (the POV row shows it). */
  lastFired(povId: string, deleteAt: string): string | null {
    const r = this.deps.db
      .prepare("SELECT step FROM ladder_steps WHERE pov_id = ? AND delete_at = ? AND outcome = 'fired' ORDER BY at DESC LIMIT 1")
      .get(povId, deleteAt) as { step: string } | undefined;
    return r?.step ?? null;
  }

  /** One pass over every POV with a deletion time; returns the steps it fired. */
  tick(): FiredStep[] {
    const now = this.now();
    const hours = this.deps.notify.settings().ladderHours;
    const last = Math.min(...hours);
    const povs = this.deps.db
      .prepare(
        "SELECT id, name, env_id, auto_delete_at FROM povs WHERE auto_delete_at IS NOT NULL AND state NOT IN ('destroyed', 'destroying')",
      )
      .all() as { id: string; name: string; env_id: string | null; auto_delete_at: string }[];
    const has = this.deps.db.prepare('SELECT 1 FROM ladder_steps WHERE pov_id = ? AND delete_at = ? AND step = ?');
    const record = this.deps.db.prepare('INSERT INTO ladder_steps (pov_id, delete_at, step, outcome, at) VALUES (?, ?, ?, ?, ?)');
    const fired: FiredStep[] = [];
    for (const p of povs) {
      const deleteAt = new Date(p.auto_delete_at);
      const due = dueSteps(now, deleteAt, hours);
      const latest = due[0];
      if (latest === undefined) continue;
      const label = stepLabel(latest);
      // Decide and record in one transaction: whoever commits first fires; nobody fires twice.
      const decided = this.deps.db.transaction(() => {
        if (has.get(p.id, p.auto_delete_at, label)) return null;
        const at = now.toISOString();
        record.run(p.id, p.auto_delete_at, label, 'fired', at);
        const skipped: string[] = [];
        for (const h of due.slice(1)) {
          const l = stepLabel(h);
          if (!has.get(p.id, p.auto_delete_at, l)) {
            record.run(p.id, p.auto_delete_at, l, 'skipped', at);
            skipped.push(l);
          }
        }
        return skipped;
      })();
      if (decided === null) continue;
      const left = Math.max(0, deleteAt.getTime() - now.getTime());
      this.deps.notify.push({
        kind: 'ladder',
        povId: p.id,
        key: `ladder:${p.id}:${p.auto_delete_at}:${label}`,
        urgent: latest === last,
        title: `POV "${p.name}" is deleted in ${leftInWords(left)}`,
        body:
          `Skytap deletes ${p.env_id ? `environment ${p.env_id}` : 'its environment'} at ${deleteAt.toISOString()} ` +
          `(warning: ${inWords(latest)} before). Open the POV and press Extend if the evaluation goes on.`,
      });
      fired.push({ povId: p.id, step: label, deleteAt: p.auto_delete_at, skipped: decided });
    }
    return fired;
  }
}
