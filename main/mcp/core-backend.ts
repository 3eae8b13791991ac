import { AppError, type JobRecord } from '../../shared/contract';
import type { Base } from '../core/base';

export const FINISHED = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

/** Follows a job of this process's core: every snapshot to onJob; the finished record, or the latest once `stop` aborts. */
export function followLocalJob(
  core: { base: Base },
  jobId: string,
  onJob: (job: JobRecord) => void,
  stop: AbortSignal,
): Promise<JobRecord> {
  const now = core.base.jobs.get(jobId);
  if (!now) return Promise.reject(new AppError('not_found', `no job ${jobId}`));
  onJob(now);
  if (FINISHED.has(now.state) || stop.aborted) return Promise.resolve(now);
  return new Promise<JobRecord>((resolve) => {
    let latest = now;
    const done = () => {
      off();
      resolve(latest);
    };
    const off = core.base.jobs.onChange((j) => {
      if (j.id !== jobId) return;
      latest = j;
      onJob(j);
      if (FINISHED.has(j.state)) done();
    });
    stop.addEventListener('abort', done, { once: true });
  });
}
