import { useCallback, useEffect, useState } from 'react';
import type { JobLogLine, JobRecord } from '../../../shared/contract';
import { api, errorText } from '../api';
import { EmptyState } from '../components/empty-state';
import { ProgressBar } from '../components/progress-bar';
import { useJobs } from '../state/jobs';
import { ErrorAlert } from '../components/error-alert';

/**
 * The Progress column of a job that is not running: a finished job's last step is history, not
 * progress ("succeeded" beside "building" read as still building), so it says how it ended.
 */
export function progressText(j: Pick<JobRecord, 'state' | 'progress'>): string {
  const step = j.progress.step;
  switch (j.state) {
    case 'queued':
      return 'waiting to start';
    case 'succeeded':
      return 'done';
    case 'running':
      return step;
    default:
      return step ? `stopped at: ${step}` : '—';
  }
}

export default function JobsPage() {
  const [includeRoutine, setIncludeRoutine] = useState(false);
  const [jobs, setJobs] = useState<JobRecord[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<{ id: string; log: JobLogLine[] } | null>(null);
  const live = useJobs((s) => s.jobs);

  const load = useCallback(() => {
    api
      .call('jobs.list', { includeRoutine, limit: 200 })
      .then((r) => {
        setJobs(r.jobs);
        setError(null);
      })
      .catch((e) => setError(errorText(e)));
  }, [includeRoutine]);
  useEffect(load, [load]);

  const merged = (jobs ?? []).map((j) => live[j.id] ?? j);
  return (
    <section className="page">
      <header className="page-head">
        <h2>Job history</h2>
        <label>
          <input type="checkbox" checked={includeRoutine} onChange={(e) => setIncludeRoutine(e.target.checked)} /> Show routine sweeps
        </label>
        <button onClick={load}>Refresh</button>
      </header>
      <ErrorAlert error={error} />
      {jobs && merged.length === 0 && (
        <EmptyState title="No jobs yet">Creating a POV, sweeps and image builds run as jobs and are listed here.</EmptyState>
      )}
      {merged.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th>Job</th>
              <th>State</th>
              <th>Progress</th>
              <th>Started</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {merged.map((j) => (
              <tr key={j.id}>
                <td>{j.title}</td>
                <td>
                  <span className={`badge state-${j.state}`}>{j.state}</span>
                  {j.error && <div className="error small">{j.error.message}</div>}
                </td>
                <td>{j.state === 'running' ? <ProgressBar fraction={j.progress.fraction} label={j.progress.step} /> : progressText(j)}</td>
                <td>{new Date(j.createdAt).toLocaleString()}</td>
                <td>
                  <button
                    onClick={() =>
                      api
                        .call('jobs.get', { id: j.id })
                        .then((r) => setOpen({ id: j.id, log: r.log }))
                        .catch((e) => setError(errorText(e)))
                    }
                  >
                    Log
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open && (
        <div className="panel">
          <header className="row">
            <h3>Log</h3>
            <button onClick={() => setOpen(null)}>Close</button>
          </header>
          <pre className="log">{open.log.map((l) => `${l.at} ${l.level} ${l.message}`).join('\n') || '(empty)'}</pre>
        </div>
      )}
    </section>
  );
}
