import { create } from 'zustand';
import type { JobRecord } from '../../../shared/contract';
import { api } from '../api';

interface JobsState {
  jobs: Record<string, JobRecord>;
  started: boolean;
  start(): void;
  upsert(job: JobRecord): void;
}

/** Live job snapshots from the `jobs.update` stream, seeded from jobs.list. */
export const useJobs = create<JobsState>((set, get) => ({
  jobs: {},
  started: false,
  upsert: (job) => set((s) => ({ jobs: { ...s.jobs, [job.id]: job } })),
  start: () => {
    if (get().started) return;
    set({ started: true });
    api.subscribe('jobs.update', '*', (job) => get().upsert(job));
    api
      .call('jobs.list', { limit: 50 })
      .then(({ jobs }) => set((s) => ({ jobs: { ...Object.fromEntries(jobs.map((j) => [j.id, j])), ...s.jobs } })))
      .catch(() => undefined);
  },
}));

export const isActive = (j: JobRecord) => j.state === 'queued' || j.state === 'running';
