import { useEffect, useState } from 'react';
import type { OpensshHost, OpensshHosts } from '../../../../shared/contract/ssh';
import { api, errorText } from '../../api';

/**
 * "From ~/.ssh/config": the hosts the SE's own `ssh` knows by name, resolved as ssh resolves them
 * (address, user, port, jump hosts). Choosing one fills the form; nothing connects or is saved.
 * Shows nothing when the file names no host.
 */
export function OpensshPicker({ onPick, label }: { onPick: (h: OpensshHost) => void; label: string }) {
  const [data, setData] = useState<OpensshHosts | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<OpensshHost | null>(null);
  useEffect(() => {
    api
      .call('ssh.opensshHosts', {})
      .then(setData)
      .catch((e) => setError(errorText(e)));
  }, []);
  if (error) return <p className="muted small wide">~/.ssh/config was not read: {error}</p>;
  if (!data?.file || (data.hosts.length === 0 && data.problems.length === 0)) return null;
  const choose = (alias: string) => {
    const h = data.hosts.find((x) => x.alias === alias) ?? null;
    setPicked(h);
    if (h) onPick(h);
  };
  return (
    <div className="openssh-pick wide">
      {data.hosts.length > 0 && (
        <label>
          {label}{' '}
          <select value={picked?.alias ?? ''} onChange={(e) => choose(e.target.value)} title={data.file}>
            <option value="">a host from {data.file}…</option>
            {data.hosts.map((h) => (
              <option key={h.alias} value={h.alias}>
                {h.alias} ({h.username}@{h.host}:{h.port}
                {h.jump.length > 0 ? ` via ${h.jump.map((j) => j.host).join(', ')}` : ''})
              </option>
            ))}
          </select>
        </label>
      )}
      {picked && picked.identityFiles.length > 0 && (
        <p className="muted small">
          ssh signs in to {picked.alias} with {picked.identityFiles.join(' or ')}: sign in with the SSH agent if ssh-add holds that key, or
          paste it as the private key.
        </p>
      )}
      {picked?.proxyCommand && (
        <p className="warn small" role="status">
          ssh reaches {picked.alias} through ProxyCommand ({picked.proxyCommand}), which POV Desk does not run: give the jump hosts it goes
          through instead.
        </p>
      )}
      {data.problems.length > 0 && (
        <details className="small">
          <summary>
            {data.problems.length} {data.problems.length === 1 ? 'line' : 'lines'} of {data.file} not read
          </summary>
          <ul>
            {data.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
