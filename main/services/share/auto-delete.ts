import { AppError, toWireError } from '../../../shared/contract/errors';
import type { NotificationService } from '../notify/service';
import { getPov, updatePov, type PovRow } from '../pov/repo';
import type { Environment } from '../skytap/schemas';
import { parseSkytapTime, portalsInEnvironment, scheduleEnvId, type Schedule, type ShareSkytapApi } from '../skytap/share-api';
import type { Db } from '../store/db';
import { capabilitiesOf } from '../../../shared/lab-platforms';
import type { ShareService } from './service';

/** Skytap's times have whole seconds: so do ours, or a read-back would never match. */
function wholeSeconds(d: Date): Date {
  return new Date(Math.floor(d.getTime() / 1000) * 1000);
}

/** A schedule ending within this of the auto-delete time counts as the same time (Skytap keeps seconds). */
const SAME_TIME_MS = 60_000;
const MAX_DAYS = 365;

export interface AutoDeleteDeps {
  db: Db;
  skytap: () => Promise<ShareSkytapApi>;
  shares: ShareService;
  notify: NotificationService;
  now?: () => Date;
}

export interface AutoDeleteSweep {
  armed: number;
  notArmed: string[];
  portalsAdded: number;
  portalsGone: number;
}

/**
 * Auto-delete: every POV has a time; the guarantee is a Skytap schedule with delete_at_end that
 * ends then (the environment is reaped even when no laptop is on). The sweep checks each managed
 * environment has one, ending at that time, and flags it "not armed" otherwise (Re-arm = set the
 * same time again).
 */
export class AutoDelete {
  constructor(private readonly deps: AutoDeleteDeps) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** The time a new POV gets: now + the auto-delete days setting (whole seconds, as Skytap keeps). */
  defaultAt(): Date {
    return wholeSeconds(new Date(this.now().getTime() + this.deps.notify.settings().autoDeleteDays * 86_400_000));
  }

  /** Checks a requested time: in the future (at least 5 minutes) and within a year; whole seconds. */
  check(at: string | Date): Date {
    const d = wholeSeconds(new Date(at));
    const now = this.now().getTime();
    if (Number.isNaN(d.getTime())) throw new AppError('invalid_request', `"${String(at)}" is not a time.`);
    if (d.getTime() < now + 5 * 60_000) {
      throw new AppError(
        'invalid_request',
        `The auto-delete time ${d.toISOString()} is less than 5 minutes away (or past); pick a later time, or Destroy the POV now.`,
      );
    }
    if (d.getTime() > now + MAX_DAYS * 86_400_000) {
      throw new AppError(
        'invalid_request',
        `The auto-delete time ${d.toISOString()} is more than ${MAX_DAYS} days away; pick an earlier one.`,
      );
    }
    return d;
  }

  private row(povId: string): PovRow {
    const r = getPov(this.deps.db, povId);
    if (!r) throw new AppError('not_found', `No POV ${povId}; refresh the POV list.`);
    return r;
  }

  private mark(povId: string, patch: Record<string, string | null>): void {
    updatePov(this.deps.db, povId, patch as never, this.now().toISOString());
  }

  /**
   * Creates (or moves) the POV's delete_at_end schedule to end at its auto-delete time. Records
   * armed / not_armed with the reason on the row; throws what Skytap said.
   */
  async arm(povId: string): Promise<void> {
    const r = this.row(povId);
    if (!r.env_id) return;
    if (!r.auto_delete_at) {
      this.mark(povId, { auto_delete_status: 'not_armed', auto_delete_reason: 'This POV has no auto-delete time; set one to arm it.' });
      return;
    }
    const end = new Date(r.auto_delete_at);
    try {
      const api = await this.deps.skytap();
      let id: string | null = null;
      if (r.schedule_id) {
        id = await api
          .updateScheduleEnd(r.schedule_id, end)
          .then((s) => s.id)
          .catch((err: unknown) => {
            if ((err as AppError).code === 'not_found') return null; // it finished or was deleted: make a new one
            throw err;
          });
      }
      if (id === null) {
        const s = await api.createSchedule({
          title: `POV Desk auto-delete: ${r.name.slice(0, 100)}`,
          envId: r.env_id,
          startAt: this.now(),
          endAt: end,
        });
        id = s.id;
      }
      this.mark(povId, { schedule_id: id, auto_delete_status: 'armed', auto_delete_reason: null });
    } catch (err) {
      this.mark(povId, {
        auto_delete_status: 'not_armed',
        auto_delete_reason: `Skytap did not accept the auto-delete schedule: ${toWireError(err).message} Press Re-arm.`,
      });
      throw err;
    }
  }

  /**
   * pov.setAutoDelete: moves the schedule (the guarantee) first, then the row, then clamps every
   * share link's expiry to the new time; a changed time withdraws the pending ladder warnings
   * (the ladder re-arms itself: its steps are keyed by the deletion time).
   */
  async set(povId: string, at: string): Promise<void> {
    const r = this.row(povId);
    if (r.state === 'destroyed' || r.state === 'destroying')
      throw new AppError('conflict', `POV "${r.name}" is ${r.state}; there is nothing to auto-delete.`);
    const d = this.check(at);
    const iso = d.toISOString();
    const prev = r.auto_delete_at ?? null;
    this.mark(povId, { auto_delete_at: iso, auto_delete_status: r.env_id ? 'pending' : null });
    if (prev !== iso) this.deps.notify.withdraw(povId, 'ladder');
    if (r.env_id) {
      await this.arm(povId);
      await this.deps.shares.clampTo(povId, d);
    }
  }

  /**
   * The sweep's part (one schedule listing per pass, portals from the environment bodies the
   * reconcile pass already read): flags environments without a matching schedule.
   */
  async sweep(envs: Environment[]): Promise<AutoDeleteSweep> {
    // Only POVs on a platform with schedules: a local POV has no auto-delete timer to judge.
    const rows = (
      this.deps.db
        .prepare("SELECT * FROM povs WHERE env_id IS NOT NULL AND state IN ('active', 'failed') ORDER BY created_at")
        .all() as PovRow[]
    ).filter((r) => capabilitiesOf(r.platform).features.schedules.supported);
    const out: AutoDeleteSweep = { armed: 0, notArmed: [], portalsAdded: 0, portalsGone: 0 };
    if (!rows.length) return out;
    const byEnv = new Map(envs.map((e) => [e.id, e]));
    for (const r of rows) {
      const env = byEnv.get(r.env_id!);
      if (env) {
        const idle = (env as Record<string, unknown>).suspend_on_idle;
        const secs = typeof idle === 'number' && idle > 0 ? idle : null;
        if ((r.suspend_on_idle ?? null) !== secs) updatePov(this.deps.db, r.id, { suspend_on_idle: secs }, this.now().toISOString());
      }
      const portals = env ? portalsInEnvironment(env as Record<string, unknown>) : null;
      if (portals) {
        const res = await this.deps.shares.applyPortals(r.id, portals);
        out.portalsAdded += res.added;
        out.portalsGone += res.gone;
      }
    }
    const api = await this.deps.skytap();
    const schedules = await api.listSchedules();
    for (const r of rows) {
      const reason = this.judge(r, schedules);
      if (reason === null) {
        out.armed++;
        continue;
      }
      out.notArmed.push(r.id);
      const fresh = r.auto_delete_status !== 'not_armed' || r.auto_delete_reason !== reason;
      this.mark(r.id, { auto_delete_status: 'not_armed', auto_delete_reason: reason });
      if (fresh) {
        this.deps.notify.push({
          kind: 'auto_delete',
          povId: r.id,
          key: `not-armed:${r.id}:${r.auto_delete_at ?? ''}`,
          title: `Auto-delete not armed for POV "${r.name}"`,
          body: `${reason} Open the POV and press Re-arm.`,
        });
      }
    }
    return out;
  }

  /** null when a delete_at_end schedule for the environment ends at the auto-delete time; else why not. */
  private judge(r: PovRow, schedules: Schedule[]): string | null {
    if (!r.auto_delete_at) return 'This POV has no auto-delete time.';
    const mine = schedules.filter((s) => s.id === r.schedule_id || scheduleEnvId(s) === r.env_id);
    if (!mine.length) return `No Skytap schedule deletes environment ${r.env_id}, so nothing reaps it if POV Desk is not running.`;
    const want = new Date(r.auto_delete_at).getTime();
    const good = mine.find((s) => {
      const end = parseSkytapTime(s.end_at);
      return s.delete_at_end && end !== null && Math.abs(end.getTime() - want) <= SAME_TIME_MS;
    });
    if (good) {
      if (good.id !== r.schedule_id || r.auto_delete_status !== 'armed') {
        this.mark(r.id, { schedule_id: good.id, auto_delete_status: 'armed', auto_delete_reason: null });
      }
      return null;
    }
    const s = mine[0]!;
    if (!s.delete_at_end) return `Skytap schedule ${s.id} for this environment does not delete it at its end.`;
    return `Skytap schedule ${s.id} ends at ${s.end_at ?? 'an unknown time'}, not at the auto-delete time ${r.auto_delete_at}.`;
  }
}
