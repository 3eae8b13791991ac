import { randomUUID } from 'node:crypto';
import type { JobRecord } from '../../../shared/contract/core';
import type { NotificationView, NotifySettings } from '../../../shared/contract/notify';
import type { Hub } from '../hub';
import type { Db } from '../store/db';

export const DEFAULT_NOTIFY_SETTINGS: NotifySettings = { doNotDisturb: false, ladderHours: [168, 72, 24, 1], autoDeleteDays: 30 };
/** A job that ran longer than this notifies when it ends. */
export const LONG_JOB_MS = 60_000;

interface Row {
  id: string;
  dedupe_key: string;
  kind: NotificationView['kind'];
  pov_id: string | null;
  title: string;
  body: string;
  urgent: number;
  count: number;
  held: number;
  created_at: string;
  updated_at: string;
  read_at: string | null;
  withdrawn_at: string | null;
}

export interface NotifyDeps {
  db: Db;
  /**
   * Where a new notification goes (the `notify.event` stream; the Electron shell shows it), and
   * where the service hears `job.changed` (a long job's end becomes a notification).
   */
  hub: Pick<Hub, 'publish' | 'on'>;
  now?: () => Date;
  /** Settings kept in the settings table. */
  settings: { getValue(key: string): string | null; setValue(key: string, value: string): void };
}

export interface NotifyInput {
  kind: NotificationView['kind'];
  povId?: string | null;
  title: string;
  body: string;
  urgent?: boolean;
  /** Identical events share a key (default: kind, POV, title and body) and fold into one row. */
  key?: string;
}

/**
 * The in-app notification list. An event whose key is already listed (and not withdrawn) only
 * counts up: 100 identical events → one row with count 100, and one toast. Do-not-disturb holds
 * everything but urgent ones: they are listed, marked held, and not published.
 */
export class NotificationService {
  constructor(private readonly deps: NotifyDeps) {
    deps.hub.on('job.changed', (job) => this.onJob(job));
  }

  private now(): string {
    return (this.deps.now?.() ?? new Date()).toISOString();
  }

  settings(): NotifySettings {
    const raw = this.deps.settings.getValue('notify.settings');
    if (!raw) return { ...DEFAULT_NOTIFY_SETTINGS };
    try {
      return { ...DEFAULT_NOTIFY_SETTINGS, ...(JSON.parse(raw) as Partial<NotifySettings>) };
    } catch {
      return { ...DEFAULT_NOTIFY_SETTINGS };
    }
  }

  setSettings(patch: Partial<NotifySettings>): NotifySettings {
    const next = { ...this.settings(), ...patch };
    next.ladderHours = [...new Set(next.ladderHours)].sort((a, b) => b - a);
    this.deps.settings.setValue('notify.settings', JSON.stringify(next));
    return next;
  }

  /** Records an event; returns the new notification, or null when it folded into an existing one. */
  push(input: NotifyInput): NotificationView | null {
    const key = input.key ?? `${input.kind}|${input.povId ?? ''}|${input.title}|${input.body}`;
    const at = this.now();
    const db = this.deps.db;
    const existing = db.prepare('SELECT * FROM notifications WHERE dedupe_key = ?').get(key) as Row | undefined;
    if (existing && existing.withdrawn_at === null) {
      db.prepare('UPDATE notifications SET count = count + 1, updated_at = ? WHERE id = ?').run(at, existing.id);
      return null;
    }
    const urgent = input.urgent === true;
    const held = this.settings().doNotDisturb && !urgent;
    const row: Row = {
      id: randomUUID(),
      dedupe_key: key,
      kind: input.kind,
      pov_id: input.povId ?? null,
      title: input.title,
      body: input.body,
      urgent: urgent ? 1 : 0,
      count: 1,
      held: held ? 1 : 0,
      created_at: at,
      updated_at: at,
      read_at: null,
      withdrawn_at: null,
    };
    db.transaction(() => {
      if (existing) db.prepare('DELETE FROM notifications WHERE id = ?').run(existing.id);
      db.prepare(
        `INSERT INTO notifications (id, dedupe_key, kind, pov_id, title, body, urgent, count, held, created_at, updated_at, ` +
          `read_at, withdrawn_at)
         VALUES (@id, @dedupe_key, @kind, @pov_id, @title, @body, @urgent, @count, @held, @created_at, @updated_at, ` +
          `@read_at, @withdrawn_at)`,
      ).run(row);
    })();
    const view = toView(row);
    if (!held) this.deps.hub.publish('notify.event', view.id, view);
    return view;
  }

  list(limit = 100): { items: NotificationView[]; unread: number } {
    const rows = this.deps.db.prepare('SELECT * FROM notifications ORDER BY created_at DESC, rowid DESC LIMIT ?').all(limit) as Row[];
    const { n } = this.deps.db.prepare('SELECT COUNT(*) AS n FROM notifications WHERE read_at IS NULL AND withdrawn_at IS NULL').get() as {
      n: number;
    };
    return { items: rows.map(toView), unread: n };
  }

  markRead(ids?: string[]): void {
    const at = this.now();
    if (!ids) {
      this.deps.db.prepare('UPDATE notifications SET read_at = ? WHERE read_at IS NULL').run(at);
      return;
    }
    const stmt = this.deps.db.prepare('UPDATE notifications SET read_at = ? WHERE id = ? AND read_at IS NULL');
    this.deps.db.transaction(() => ids.forEach((id) => stmt.run(at, id)))();
  }

  /** Withdraws a POV's notifications of a kind (e.g. the ladder's, after Extend). */
  withdraw(povId: string, kind: NotificationView['kind']): number {
    return this.deps.db
      .prepare('UPDATE notifications SET withdrawn_at = ? WHERE pov_id = ? AND kind = ? AND withdrawn_at IS NULL')
      .run(this.now(), povId, kind).changes;
  }

  /** A job that ran over LONG_JOB_MS notifies when it ends (wired to JobRunner.onChange). */
  onJob(job: JobRecord): void {
    if (job.routine || !job.startedAt || !job.finishedAt) return;
    if (!['succeeded', 'failed', 'cancelled'].includes(job.state)) return;
    const ms = Date.parse(job.finishedAt) - Date.parse(job.startedAt);
    if (!(ms > LONG_JOB_MS)) return;
    const verb = job.state === 'succeeded' ? 'finished' : job.state === 'failed' ? 'failed' : 'was cancelled';
    this.push({
      kind: 'job',
      povId: null,
      key: `job:${job.id}`,
      title: `${job.title} ${verb}`,
      body: job.state === 'failed' && job.error ? job.error.message : `after ${Math.round(ms / 1000)} s`,
    });
  }
}

function toView(r: Row): NotificationView {
  return {
    id: r.id,
    kind: r.kind,
    povId: r.pov_id,
    title: r.title,
    body: r.body,
    urgent: r.urgent === 1,
    count: r.count,
    held: r.held === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    readAt: r.read_at,
    withdrawnAt: r.withdrawn_at,
  };
}
