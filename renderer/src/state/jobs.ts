import { create } from 'zustand';
import type { JobRecord } from '../../../shared/contract';
import { api } from '../api';

interface JobsState {
  jobs: Record<string, JobRecord>;
  /** Follows the `jobs.update` stream while at least one component holds it; returns the release. */
  follow(): () => void;
  upsert(job: JobRecord): void;
}

let holders = 0;
let stop: (() => void) | null = null;

/** Live job snapshots from the `jobs.update` stream, seeded from jobs.list. */
export const useJobs = create<JobsState>((set, get) => ({
  jobs: {},
  upsert: (job) => set((s) => ({ jobs: { ...s.jobs, [job.id]: job } })),
  follow: () => {
    if (holders++ === 0) {
      set({ jobs: {} });
      stop = api.subscribe('jobs.update', '*', (job) => get().upsert(job));
      api
        .call('jobs.list', { limit: 50 })
        .then(({ jobs }) => set((s) => ({ jobs: { ...Object.fromEntries(jobs.map((j) => [j.id, j])), ...s.jobs } })))
        .catch(() => undefined);
    }
    return () => {
      if (--holders === 0) {
        stop?.();
        stop = null;
      }
    };
  },
}));

export const isActive = (j: JobRecord) => j.state === 'queued' || j.state === 'running';
