import { useEffect, useRef, useState } from 'react';
import { api, errorText } from '../../api';
import { useJobs } from '../../state/jobs';
import { ErrorAlert } from '../error-alert';
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
/** Where "Type runner script" saves the template runner on the VM (its checks refer to this name). */
export const RUNNER_TYPED_PATH = '/tmp/dashboard-bootstrap-runner';

/** The template runner from bake.runnerScript (the same text the Templates page shows). */
async function loadRunner(): Promise<{ script: string; sha256: string }> {
  const r = (await (api.call as (m: string, a: unknown) => Promise<unknown>)('bake.runnerScript', {})) as {
    script?: unknown;
    sha256?: unknown;
  };
  if (typeof r?.script !== 'string' || typeof r.sha256 !== 'string') throw new Error('bake.runnerScript answered without a script');
  return { script: r.script, sha256: r.sha256 };
}

/**
 * With `runner`, the panel loads the template runner and starts typing it at once ("Type runner
 * script"); otherwise the user pastes a script (or loads the runner) and presses Type it.
 */
export function TypeIntoPanel({ sessionId, onClose, runner = false }: { sessionId: string; onClose: () => void; runner?: boolean }) {
  const [script, setScript] = useState('');
  const [path, setPath] = useState(runner ? RUNNER_TYPED_PATH : '/tmp/povdesk-typed.sh');
  const [jobId, setJobId] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const follow = useJobs((s) => s.follow);
  const job = useJobs((s) => (jobId ? s.jobs[jobId] : undefined));
  useEffect(() => follow(), [follow]);
  const result = job?.state === 'succeeded' ? (job.result as TypeResult) : null;
  const start = (text = script, to = path) => {
    setError(null);
    setJobId(null);
    api
      .call('ssh.typeInto', { sessionId, script: text, path: to })
      .then((r) => setJobId(r.jobId))
      .catch((e) => setError(errorText(e)));
  };
  const takeRunner = (andType: boolean) => {
    setError(null);
    loadRunner()
      .then((r) => {
        setScript(r.script);
        setPath(RUNNER_TYPED_PATH);
        if (andType) start(r.script, RUNNER_TYPED_PATH);
      })
      .catch((e) => setError(`could not load the template runner: ${errorText(e)}`));
  };
  // "Type runner script": load and type once per session the panel is opened for.
  const typedFor = useRef<string | null>(null);
  useEffect(() => {
    if (!runner || typedFor.current === sessionId) return;
    typedFor.current = sessionId;
    takeRunner(true);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [runner, sessionId]);
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
        <button className="primary" disabled={!script || !!running} onClick={() => start()}>
          Type it
        </button>
        <button disabled={!!running} onClick={() => takeRunner(false)}>
          Load the template runner
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
      <ErrorAlert error={error} />
    </div>
  );
}
