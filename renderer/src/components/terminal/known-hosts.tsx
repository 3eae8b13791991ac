import { useCallback, useEffect, useState } from 'react';
import { api, errorText } from '../../api';

/** The host keys POV Desk accepted, each with Forget (the next connection asks again). */
export function KnownHosts() {
  const [list, setList] = useState<{ host: string; port: number; keyType: string; fingerprint: string; addedAt: string }[]>([]);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    api
      .call('ssh.knownHosts.list', {})
      .then(setList)
      .catch((e) => setError(errorText(e)));
  }, []);
  useEffect(load, [load]);
  return (
    <details className="known-hosts" onToggle={load}>
      <summary>Known hosts ({list.length})</summary>
      <table className="table">
        <tbody>
          {list.map((k) => (
            <tr key={`${k.host}:${k.port}`}>
              <td>
                {k.host}:{k.port}
              </td>
              <td className="mono">
                {k.keyType} {k.fingerprint}
              </td>
              <td>{new Date(k.addedAt).toLocaleString()}</td>
              <td>
                <button
                  title="Forget this key; the next connection asks again"
                  onClick={() =>
                    api
                      .call('ssh.knownHosts.remove', { host: k.host, port: k.port })
                      .then(load)
                      .catch((e) => setError(errorText(e)))
                  }
                >
                  Forget
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {error && <p className="error">{error}</p>}
    </details>
  );
}
