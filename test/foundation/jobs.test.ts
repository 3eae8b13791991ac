import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/contract';
import { StreamHub, type Subscriber } from '../../main/core/streams';
import { JobRunner } from '../../main/services/jobs/runner';
import { openDatabase } from '../../main/services/store/db';
import { tempHome } from './helpers';
import { JOB_KIND } from '../../shared/contract/job-kinds';

const runner = () => {
  const file = join(tempHome(), 'j.db');
  return { runner: new JobRunner(openDatabase(file)), file };
};

describe('JobRunner', () => {
  it('runs a job through queued → running → succeeded with progress, log and result', async () => {
    const { runner: r } = runner();
    const seen: string[] = [];
    r.onChange((j) => seen.push(`${j.state}:${j.progress.step}`));
    const id = r.start({ kind: JOB_KIND.povRefreshVms, title: 'Demo', subject: 'pov-1' }, async (job) => {
      job.progress('step one', 0.5, 'half');
      job.log('hello');
      return { answer: 42 };
    });
    const done = await r.wait(id);
    expect(done.state).toBe('succeeded');
    expect(done.result).toEqual({ answer: 42 });
    expect(seen).toEqual(['queued:', 'running:', 'running:step one', 'succeeded:step one']);
    expect(r.log(id).map((l) => l.message)).toEqual(['hello']);
    expect(r.list({ subject: 'pov-1' }).map((j) => j.id)).toEqual([id]);
  });

  it('publishes every snapshot on its hub as jobs.update, keyed by job id', async () => {
    const hub = new StreamHub();
    const r = new JobRunner(openDatabase(join(tempHome(), 'j.db')), { hub });
    const got: string[] = [];
    const sub: Subscriber = {
      unacked: new Map(),
      send: (stream, key, data) => got.push(`${stream} ${key} ${(data as { state: string }).state}`),
    };
    hub.subscribe('jobs.update', '*', sub);
    const id = r.start({ kind: JOB_KIND.povRefreshVms, title: 'Demo' }, async () => 1);
    await r.wait(id);
    expect(got).toEqual([`jobs.update ${id} queued`, `jobs.update ${id} running`, `jobs.update ${id} succeeded`]);
  });

  it('a thrown AppError fails the job with that error', async () => {
    const { runner: r } = runner();
    const id = r.start({ kind: JOB_KIND.povRefreshVms, title: 'Fails' }, async () => {
      throw new AppError('rate_limited', 'Skytap rate limited this account');
    });
    const done = await r.wait(id);
    expect(done.state).toBe('failed');
    expect(done.error).toEqual({ code: 'rate_limited', message: 'Skytap rate limited this account' });
  });

  it('cancel aborts the signal and ends the job cancelled', async () => {
    const { runner: r } = runner();
    const id = r.start(
      { kind: JOB_KIND.povRefreshVms, title: 'Long' },
      (job) => new Promise((_res, rej) => job.signal.addEventListener('abort', () => rej(job.signal.reason))),
    );
    await new Promise((res) => setTimeout(res, 10));
    r.cancel(id);
    expect((await r.wait(id)).state).toBe('cancelled');
    expect(() => r.cancel(id)).toThrow(/already cancelled/);
  });

  it('cancels a queued job without running its work', async () => {
    const file = join(tempHome(), 'q.db');
    const r = new JobRunner(openDatabase(file), { concurrency: 1 });
    let release!: () => void;
    const first = r.start({ kind: JOB_KIND.povStart, title: 'first' }, () => new Promise<void>((res) => (release = res)));
    let ran = false;
    const second = r.start({ kind: JOB_KIND.povSuspend, title: 'second' }, async () => {
      ran = true;
    });
    expect(r.get(second)!.state).toBe('queued');
    r.cancel(second);
    expect((await r.wait(second)).state).toBe('cancelled');
    release();
    expect((await r.wait(first)).state).toBe('succeeded');
    expect(ran).toBe(false);
  });

  it('rows left running by a dead process become interrupted at the next start', async () => {
    const { runner: r, file } = runner();
    const id = r.start({ kind: JOB_KIND.povRefreshVms, title: 'Never ends' }, () => new Promise(() => undefined));
    await new Promise((res) => setTimeout(res, 10));
    expect(r.get(id)!.state).toBe('running');
    const next = new JobRunner(openDatabase(file));
    expect(next.markInterrupted()).toBe(1);
    expect(next.get(id)!.state).toBe('interrupted');
  });

  it('hides routine jobs unless asked and prunes them on retention', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const r = new JobRunner(openDatabase(join(tempHome(), 'r.db')), { now: () => now });
    await r.wait(r.start({ kind: JOB_KIND.reconcile, title: 'sweep', routine: true }, async () => 1));
    await r.wait(r.start({ kind: JOB_KIND.povCreate, title: 'user' }, async () => 1));
    expect(r.list().map((j) => j.title)).toEqual(['user']);
    expect(r.list({ includeRoutine: true })).toHaveLength(2);
    now = new Date('2026-01-09T00:00:00Z');
    expect(r.pruneRoutine(7 * 24 * 3600 * 1000)).toBe(1);
    expect(r.list({ includeRoutine: true }).map((j) => j.title)).toEqual(['user']);
  });
});
