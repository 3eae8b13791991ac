import { useRef, useState } from 'react';
import type { TestConnectionResult } from '../../../../shared/contract/skytap';
import { api, errorText, type ApiError } from '../../api';
import type { SkytapForm } from '../settings-page';
import '../../components/pov/pov.css';

const TITLES: Record<TestConnectionResult['outcome'], string> = {
  ok: 'Connected',
  unauthorized: 'Not authorised',
  project_not_found: 'Project not found',
  no_templates: 'No templates visible',
  failed: 'Connection failed',
};

/**
 * Settings → Skytap → Test connection: tests what is in the form, saved or not (one page of
 * templates, one retry; a blank field is the saved value, a blank token the saved one at the saved
 * URL only). The outcome comes with its remedy, once. An empty catalogue is red. Each run is
 * numbered (`data-run`), so a reader can wait for this run's answer rather than the last one's.
 */
export default function SkytapTestConnection({ form }: { form: SkytapForm }) {
  const [running, setRunning] = useState(false);
  const [result, setResult] = useState<TestConnectionResult | null>(null);
  const [error, setError] = useState<{ text: string; code: string | null } | null>(null);
  const [run, setRun] = useState(0);
  const latest = useRef(0);

  async function test() {
    const mine = ++latest.current;
    setRun(mine);
    setRunning(true);
    setError(null);
    setResult(null);
    try {
      const r = await api.call('skytap.testForm', {
        username: form.username.trim(),
        url: form.url.trim(),
        projectId: form.projectId.trim(),
        ...(form.apiToken ? { apiToken: form.apiToken } : {}),
      });
      if (mine === latest.current) setResult(r);
    } catch (e) {
      if (mine === latest.current) setError({ text: errorText(e), code: (e as ApiError).code ?? null });
    } finally {
      if (mine === latest.current) setRunning(false);
    }
  }

  return (
    <div className="skytap-test">
      <div className="row">
        <button onClick={() => void test()} disabled={running}>
          {running ? 'Testing…' : 'Test connection'}
        </button>
        <span className="small muted">Tests the form as it is now; Save keeps it.</span>
      </div>
      {error && (
        <div className="conn-result bad" role="alert" data-outcome="error" data-run={run}>
          <strong>Could not test{error.code ? ` (${error.code.replace('_', ' ')})` : ''}</strong>
          <p>{error.text}</p>
        </div>
      )}
      {result && (
        <div className={`conn-result ${result.good ? 'good' : 'bad'}`} role="status" data-outcome={result.outcome} data-run={run}>
          <strong>
            {TITLES[result.outcome]}
            {result.reason ? ` (${result.reason.replace('_', ' ')})` : ''}
          </strong>
          <p>{result.message}</p>
          {result.remedy && <p className="small">{result.remedy}</p>}
          {result.templateCount !== null && (
            <p className="small muted">
              {result.templateCount} template{result.templateCount === 1 ? '' : 's'} visible (
              {result.scope === 'project' ? 'project-scoped' : 'account-wide'})
            </p>
          )}
        </div>
      )}
    </div>
  );
}
