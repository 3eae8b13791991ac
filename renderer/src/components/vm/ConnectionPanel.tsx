import { useState } from 'react';
import type { VmConnection } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../ErrorAlert';

/** Local vm-manager (started by the app) or a remote one (URL + bearer token kept in the keychain). */
export function ConnectionPanel({ connection, onChanged }: { connection: VmConnection | null; onChanged: () => void }) {
  const [url, setUrl] = useState(connection?.mode === 'remote' ? (connection.url ?? '') : '');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (mode: 'local' | 'remote') => {
    setBusy(true);
    setError(null);
    try {
      await api.call('vm.setConnection', mode === 'local' ? { mode } : { mode, url, ...(token ? { token } : {}) });
      setToken('');
      onChanged();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <details className="panel vm-connection">
      <summary>
        vm-manager: {connection ? (connection.mode === 'local' ? `local${connection.pid ? ` (pid ${connection.pid})` : ''}` : `remote ${connection.url ?? ''}`) : '…'}
      </summary>
      <div className="form">
        <p className="muted small">
          The app starts its own vm-manager under {connection?.stateDir ?? 'POVDESK_HOME/vm-manager'}; its VMs keep running when the app
          quits. A remote vm-manager with the same API is reached with its URL and bearer token (kept in the OS keychain).
        </p>
        <label>
          Remote URL
          <input value={url} onChange={(e) => setUrl(e.target.value.trim())} placeholder="https://vm-manager.example:8443" />
        </label>
        <label>
          Bearer token {connection?.mode === 'remote' && connection.tokenSet && <span className="muted small">(set; leave empty to keep)</span>}
          <input type="password" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" />
        </label>
        <ErrorAlert error={error} />
        <div className="row">
          <button onClick={() => void save('remote')} disabled={busy || !url}>
            Use remote
          </button>
          <button onClick={() => void save('local')} disabled={busy || connection?.mode === 'local'}>
            Use local
          </button>
        </div>
      </div>
    </details>
  );
}
