import { useState } from 'react';
import type { TestConnectionResult } from '../../../../shared/contract/skytap';
import { api, errorText } from '../../api';
import '../../components/pov/pov.css';

const TITLES: Record<TestConnectionResult['outcome'], string> = {
  ok: 'Connected',
  unauthorized: 'Not authorised',
  project_not_found: 'Project not found',
  no_templates: 'No templates visible',
  failed: 'Connection failed',
};

/**
 * Settings → Skytap → Test connection. It tests the SAVED values (one page of templates, one
 * retry), so it says "save first"; the outcome comes with its remedy. An empty catalogue is red.
 */
export default function SkytapTestConnection() {
  const [running, setRunning] = useState(false);
  const [result, setResult] = useState<TestConnectionResult | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function run() {
    setRunning(true);
    setError(null);
    setResult(null);
    try {
      setResult(await api.call('skytap.testConnection', {}));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setRunning(false);
    }
  }

  return (
    <div className="skytap-test">
      <div className="row">
        <button onClick={() => void run()} disabled={running}>
          {running ? 'Testing…' : 'Test connection'}
        </button>
        <span className="small muted">Tests the saved settings, not the form: save first.</span>
      </div>
      {error && (
        <div className="conn-result bad" role="alert" data-outcome="error">
          <strong>Could not test</strong>
          <p>{error}</p>
        </div>
      )}
      {result && (
        <div className={`conn-result ${result.good ? 'good' : 'bad'}`} role="status" data-outcome={result.outcome}>
          <strong>
            {TITLES[result.outcome]}
            {result.reason ? ` (${result.reason.replace('_', ' ')})` : ''}
          </strong>
          <p>{result.message}</p>
          {result.remedy && <p className="small">{result.remedy}</p>}
          {result.templateCount !== null && (
            <p className="small muted">
              {result.templateCount} template{result.templateCount === 1 ? '' : 's'} visible ({result.scope === 'project' ? 'project-scoped' : 'account-wide'})
            </p>
          )}
        </div>
      )}
    </div>
  );
}
