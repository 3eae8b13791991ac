import { randomUUID } from 'node:crypto';
import {
  AppError,
  toWireError,
  type JobKind,
  type JobLogLine,
  type JobRecord,
  type JobState,
  type WireError,
} from '../../../shared/contract';
import type { Hub } from '../hub';
import type { Db } from '../store/db';

export interface JobContext {
  id: string;
  signal: AbortSignal;
  progress(step: string, fraction: number | null, message?: string): void;
  log(message: string, level?: 'info' | 'warn' | 'error'): void;
}

export interface JobSpec {
  kind: JobKind;
  title: string;
  subject?: string | null;
  routine?: boolean;
}

/** In-process observers of job snapshots; transports get them from the hub's `jobs.update` stream. */
export type JobListener = (job: JobRecord) => void;

interface Running {
  controller: AbortController;
  done: Promise<JobRecord>;
  start?: () => void;
}

interface Row {
  id: string;
  kind: JobKind;
  title: string;
  subject: string | null;
  routine: number;
  state: JobState;
  step: string;
  fraction: number | null;
  message: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  result: string | null;
}

function toRecord(r: Row): JobRecord {
  return {
    id: r.id,
    kind: r.kind,
    title: r.title,
    subject: r.subject,
    routine: r.routine === 1,
    state: r.state,
    progress: { step: r.step, fraction: r.fraction, message: r.message },
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    error: r.error ? (JSON.parse(r.error) as WireError) : null,
    result: r.result ? JSON.parse(r.result) : null,
  };
}

/**
 * Runs long work (provisioning, sweeps, image builds) with states, progress, cancel, a log per job
 * and a history table. Every change is committed before it is announced, so a crash leaves the
 * row as it last was; `markInterrupted` at start turns rows left running into `interrupted`.
 */
export class JobRunner {
  private readonly running = new Map<string, Running>();
  private readonly waiting: string[] = [];
  private active = 0;
  private readonly listeners = new Set<JobListener>();
  private readonly seq = new Map<string, number>();

  constructor(
    private readonly db: Db,
    /**
     * scrub: applied to every text a job record keeps (the logger's secret redaction in the app).
     * hub: where every snapshot is published as it changes, on `jobs.update` keyed by job id, and
     * emitted as `job.changed` for the services that react to jobs (hub.ts DomainEvents).
     */
    private readonly opts: {
      concurrency?: number;
      now?: () => Date;
      scrub?: (text: string) => string;
      hub?: Pick<Hub, 'publish' | 'emit'>;
    } = {},
  ) {}

  private scrub(text: string): string {
    return this.opts.scrub ? this.opts.scrub(text) : text;
  }

  onChange(fn: JobListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private now() {
    return (this.opts.now?.() ?? new Date()).toISOString();
  }

  /** The ids of this runner's jobs queued or running now. */
  busy(): string[] {
    return [...this.running.keys()];
  }

  /** Rows a previous process left queued or running: that process is gone, so they were interrupted. */
  markInterrupted(): number {
    const res = this.db
      .prepare(
        `UPDATE jobs SET state = 'interrupted', finished_at = ?, message = 'interrupted: POV Desk stopped while this job ran; run it again'
         WHERE state IN ('queued', 'running')`,
      )
      .run(this.now());
    return res.changes;
  }

  start<T>(spec: JobSpec, work: (job: JobContext) => Promise<T>): string {
    const id = randomUUID();
    this.db
      .prepare(`INSERT INTO jobs (id, kind, title, subject, routine, state, created_at) VALUES (?, ?, ?, ?, ?, 'queued', ?)`)
      .run(id, spec.kind, this.scrub(spec.title), spec.subject ?? null, spec.routine ? 1 : 0, this.now());
    const controller = new AbortController();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const entry: Running = { controller, done: undefined as unknown as Promise<JobRecord> };
    entry.done = gate.then(() => this.execute(id, controller, work));
    entry.start = release;
    this.running.set(id, entry);
    this.emit(id);
    this.waiting.push(id);
    this.pump();
    return id;
  }

  private pump() {
    const limit = this.opts.concurrency ?? 4;
    while (this.active < limit && this.waiting.length) {
      const id = this.waiting.shift()!;
      const entry = this.running.get(id);
      if (!entry?.start) continue;
      this.active++;
      const start = entry.start;
      delete entry.start;
      start();
    }
  }

  private async execute<T>(id: string, controller: AbortController, work: (job: JobContext) => Promise<T>) {
    try {
      if (controller.signal.aborted) {
        this.finish(id, 'cancelled', null, new AppError('cancelled', 'cancelled before it started'));
        return this.get(id)!;
      }
      this.db.prepare(`UPDATE jobs SET state = 'running', started_at = ? WHERE id = ?`).run(this.now(), id);
      this.emit(id);
      const ctx: JobContext = {
        id,
        signal: controller.signal,
        progress: (step, fraction, message = '') => {
          const f = fraction === null ? null : Math.max(0, Math.min(1, fraction));
          this.db
            .prepare(`UPDATE jobs SET step = ?, fraction = ?, message = ? WHERE id = ?`)
            .run(this.scrub(step), f, this.scrub(message), id);
          this.emit(id);
        },
        log: (message, level = 'info') => this.appendLog(id, message, level),
      };
      try {
        const result = await work(ctx);
        if (controller.signal.aborted) this.finish(id, 'cancelled', result, new AppError('cancelled', 'cancelled'));
        else this.finish(id, 'succeeded', result, null);
      } catch (err) {
        const wire = toWireError(err);
        const state: JobState = controller.signal.aborted || wire.code === 'cancelled' ? 'cancelled' : 'failed';
        this.appendLog(id, `${state}: ${wire.message}`, state === 'failed' ? 'error' : 'warn');
        this.finish(id, state, null, wire);
      }
      return this.get(id)!;
    } finally {
      this.active--;
      this.running.delete(id);
      this.pump();
    }
  }

  private finish(id: string, state: JobState, result: unknown, error: AppError | WireError | null) {
    const wire = error instanceof AppError ? error.toWire() : error;
    this.db
      .prepare(`UPDATE jobs SET state = ?, finished_at = ?, result = ?, error = ? WHERE id = ?`)
      .run(
        state,
        this.now(),
        result === undefined || result === null ? null : this.scrub(JSON.stringify(result)),
        wire ? this.scrub(JSON.stringify(wire)) : null,
        id,
      );
    this.emit(id);
  }

  private appendLog(id: string, message: string, level: 'info' | 'warn' | 'error') {
    let n = this.seq.get(id);
    if (n === undefined) {
      const row = this.db.prepare('SELECT COALESCE(MAX(seq), 0) AS n FROM job_log WHERE job_id = ?').get(id) as { n: number };
      n = row.n;
    }
    n++;
    this.seq.set(id, n);
    this.db
      .prepare('INSERT INTO job_log (job_id, seq, at, level, message) VALUES (?, ?, ?, ?, ?)')
      .run(id, n, this.now(), level, this.scrub(message));
  }

  private emit(id: string) {
    const rec = this.get(id);
    if (!rec) return;
    this.opts.hub?.publish('jobs.update', rec.id, rec);
    this.opts.hub?.emit('job.changed', rec);
    for (const fn of this.listeners) {
      try {
        fn(rec);
      } catch {
        // a listener's failure is not the job's
      }
    }
  }

  get(id: string): JobRecord | null {
    const row = this.db.prepare('SELECT * FROM jobs WHERE id = ?').get(id) as Row | undefined;
    return row ? toRecord(row) : null;
  }

  log(id: string): JobLogLine[] {
    return this.db.prepare('SELECT at, level, message FROM job_log WHERE job_id = ? ORDER BY seq').all(id) as JobLogLine[];
  }

  list(opts: { includeRoutine?: boolean; limit?: number; subject?: string } = {}): JobRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (!opts.includeRoutine) where.push('routine = 0');
    if (opts.subject) {
      where.push('subject = ?');
      params.push(opts.subject);
    }
    const sql = `SELECT * FROM jobs ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY created_at DESC, rowid DESC LIMIT ?`;
    params.push(opts.limit ?? 200);
    return (this.db.prepare(sql).all(...params) as Row[]).map(toRecord);
  }

  /** Resolves with the finished record; for a job of an earlier process, with its stored row. */
  async wait(id: string): Promise<JobRecord> {
    const entry = this.running.get(id);
    if (entry) return entry.done;
    const rec = this.get(id);
    if (!rec) throw new AppError('not_found', `no job ${id}`);
    return rec;
  }

  cancel(id: string): void {
    const entry = this.running.get(id);
    if (!entry) {
      const rec = this.get(id);
      if (!rec) throw new AppError('not_found', `no job ${id}`);
      throw new AppError('conflict', `job ${id} is already ${rec.state}`);
    }
    this.appendLog(id, 'cancel requested', 'warn');
    entry.controller.abort(new AppError('cancelled', 'cancelled by the user'));
    if (entry.start) {
      // still queued: let it run its cancellation path at once
      const i = this.waiting.indexOf(id);
      if (i >= 0) this.waiting.splice(i, 1);
      this.active++;
      const start = entry.start;
      delete entry.start;
      start();
    }
  }

  /** Deletes finished routine jobs older than the retention. */
  pruneRoutine(olderThanMs: number): number {
    const cutoff = new Date((this.opts.now?.() ?? new Date()).getTime() - olderThanMs).toISOString();
    return this.db.prepare(`DELETE FROM jobs WHERE routine = 1 AND state NOT IN ('queued','running') AND created_at < ?`).run(cutoff)
      .changes;
  }

  /** Aborts everything still running and waits for it to settle (app shutdown). */
  async shutdown(): Promise<void> {
    const all = [...this.running.entries()];
    for (const [, e] of all) e.controller.abort(new AppError('cancelled', 'POV Desk is shutting down'));
    await Promise.allSettled(all.map(([, e]) => e.done));
  }
}
