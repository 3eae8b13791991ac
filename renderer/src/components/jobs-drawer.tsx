import { useEffect, useState } from 'react';
import { api, errorText } from '../api';
import { isActive, useJobs } from '../state/jobs';
import { ProgressBar } from './progress-bar';
import { ErrorAlert } from './error-alert';

/** Live progress of running jobs with a cancel button each; collapsible. */
export function JobsDrawer() {
  const jobs = useJobs((s) => s.jobs);
  const follow = useJobs((s) => s.follow);
  const [open, setOpen] = useState(true);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => follow(), [follow]);
  const active = Object.values(jobs)
    .filter((j) => isActive(j) && !j.routine)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  if (active.length === 0) return null;
  return (
    <aside className="jobs-drawer" aria-label="Running jobs">
      <button className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
        {active.length} running {active.length === 1 ? 'job' : 'jobs'}
      </button>
      <ErrorAlert error={error} />
      {open && (
        <ul>
          {active.map((j) => (
            <li key={j.id} data-testid="running-job">
              <div className="row">
                <strong>{j.title}</strong>
                <button
                  onClick={() => api.call('jobs.cancel', { id: j.id }).catch((e) => setError(errorText(e)))}
                  aria-label={`Cancel ${j.title}`}
                >
                  Cancel
                </button>
              </div>
              <ProgressBar fraction={j.progress.fraction} label={j.progress.step} />
              <small className="muted">{j.progress.message}</small>
            </li>
          ))}
        </ul>
      )}
    </aside>
  );
}
