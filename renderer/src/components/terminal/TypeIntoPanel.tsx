import { useEffect, useState } from 'react';
import { errorText } from '../../api';
import { useJobs } from '../../state/jobs';
import { sshCall } from '../../state/terminals';
import './terminal.css';

interface TypeResult {
  match: boolean;
  expected: string;
  actual: string | null;
  lines: number;
  path: string;
}

/**
 * "Type into console": sends a script to the shell on this terminal line by line (waiting for each
 * echo), then shows whether `sha256sum` of what arrived matches what was sent.
 */
export function TypeIntoPanel({ sessionId, onClose }: { sessionId: string; onClose: () => void }) {
  const [script, setScript] = useState('');
  const [path, setPath] = useState('/tmp/povdesk-typed.sh');
  const [jobId, setJobId] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const follow = useJobs((s) => s.follow);
  const job = useJobs((s) => (jobId ? s.jobs[jobId] : undefined));
  useEffect(() => follow(), [follow]);
  const result = job?.state === 'succeeded' ? (job.result as TypeResult) : null;
  const start = () => {
    setError(null);
    sshCall('ssh.typeInto', { sessionId, script, path })
      .then((r) => setJobId(r.jobId))
      .catch((e) => setError(errorText(e)));
  };
  const running = job && (job.state === 'queued' || job.state === 'running');
  return (
    <div className="type-into" role="region" aria-label="Type into console">
      <label>
        Script <textarea rows={6} value={script} onChange={(e) => setScript(e.target.value)} spellCheck={false} />
      </label>
      <label>
        Save as on the other side <input value={path} onChange={(e) => setPath(e.target.value)} />
      </label>
      <div className="actions">
        <button className="primary" disabled={!script || !!running} onClick={start}>
          Type it
        </button>
        <button onClick={onClose}>Close</button>
        {running && <span className="muted">{job.progress.message || 'typing…'}</span>}
      </div>
      {result && (
        <p className={result.match ? 'ok-text' : 'danger-text'} data-testid="type-result">
          {result.match
            ? `sha256 match (${result.lines} lines at ${result.path})`
            : result.actual
              ? `sha256 MISMATCH: sent ${result.expected}, the console has ${result.actual}`
              : `no sha256sum answer from the console (sent ${result.expected})`}
        </p>
      )}
      {job?.state === 'failed' && <p className="error">{job.error?.message}</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
