import { useState } from 'react';
import type { VmConnection, VmLogin } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';

type Auth = 'token' | 'oidc';

/**
 * Local vm-manager (started by the app) or a remote one: a cluster's vm-manager with its URL, a
 * static bearer token or an OIDC login to the cluster's identity provider (device code: the page
 * shows the code to enter at the issuer), and the CA bundle its certificate is signed with. Tokens
 * are kept in the OS keychain. When the login is gone or refused, the panel opens with "Log in".
 */
export function ConnectionPanel({ connection, onChanged }: { connection: VmConnection | null; onChanged: () => void }) {
  const remote = connection?.mode === 'remote';
  const [url, setUrl] = useState(remote ? (connection.url ?? '') : '');
  const [auth, setAuth] = useState<Auth>(connection?.auth ?? 'token');
  const [token, setToken] = useState('');
  const [issuer, setIssuer] = useState(connection?.oidcIssuer ?? '');
  const [clientId, setClientId] = useState(connection?.oidcClientId ?? '');
  const [ca, setCa] = useState(connection?.caBundle ?? '');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [login, setLogin] = useState<VmLogin | null>(null);
  const needsLogin = remote && connection.auth === 'oidc' && !connection.tokenSet;

  const save = async (mode: 'local' | 'remote') => {
    setBusy(true);
    setError(null);
    try {
      if (mode === 'local') await api.call('vm.setConnection', { mode });
      else
        await api.call('vm.setConnection', {
          mode,
          url,
          auth,
          caBundle: ca.trim(),
          ...(auth === 'token' && token ? { token } : {}),
          ...(auth === 'oidc' ? { oidcIssuer: issuer.trim(), oidcClientId: clientId.trim() } : {}),
        });
      setToken('');
      onChanged();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const startLogin = async () => {
    setError(null);
    try {
      const l = await api.call('vm.login', {});
      setLogin(l);
      const job = await waitForJob(l.jobId);
      setLogin(null);
      if (job.state !== 'succeeded') setError(job.error?.message ?? `the login ${job.state}`);
      onChanged();
    } catch (e) {
      setLogin(null);
      setError(errorText(e));
    }
  };

  const logout = async () => {
    try {
      await api.call('vm.logout', {});
      onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };

  return (
    <details className="panel vm-connection" open={needsLogin || login !== null || undefined}>
      <summary>
        vm-manager:{' '}
        {connection
          ? connection.mode === 'local'
            ? `local${connection.pid ? ` (pid ${connection.pid})` : ''}`
            : `remote ${connection.url ?? ''}`
          : '…'}
      </summary>
      {needsLogin && !login && (
        <div className="row" role="alert" data-testid="vm-relogin">
          <span className="error">
            Not logged in to {connection.oidcIssuer ?? "the cluster's identity provider"} (or the login expired).
          </span>
          <button className="primary" onClick={() => void startLogin()}>
            Log in
          </button>
        </div>
      )}
      {login && (
        <p className="vm-login" data-testid="vm-login-code">
          Open{' '}
          <a href={login.verificationUriComplete ?? login.verificationUri} target="_blank" rel="noreferrer">
            {login.verificationUri}
          </a>{' '}
          and enter <strong>{login.userCode}</strong>. Waiting for the approval…
        </p>
      )}
      <div className="form">
        <p className="muted small">
          The app starts its own vm-manager under {connection?.stateDir ?? 'POVDESK_HOME/vm-manager'}; its VMs keep running when the app
          quits. A cluster's vm-manager (giantswarm's API) is reached with its URL and a bearer token or a login to the cluster's identity
          provider; tokens are kept in the OS keychain.
        </p>
        <label>
          Remote URL
          <input value={url} onChange={(e) => setUrl(e.target.value.trim())} placeholder="https://vm-manager.example:8443" />
        </label>
        <fieldset className="row">
          <legend>Sign-in</legend>
          <label>
            <input type="radio" name="vm-auth" checked={auth === 'token'} onChange={() => setAuth('token')} /> Bearer token
          </label>
          <label>
            <input type="radio" name="vm-auth" checked={auth === 'oidc'} onChange={() => setAuth('oidc')} /> OIDC login
          </label>
        </fieldset>
        {auth === 'token' ? (
          <label>
            Bearer token{' '}
            {remote && connection.auth === 'token' && connection.tokenSet && (
              <span className="muted small">(set; leave empty to keep)</span>
            )}
            <input type="password" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" />
          </label>
        ) : (
          <>
            <label>
              Issuer URL
              <input value={issuer} onChange={(e) => setIssuer(e.target.value)} placeholder="https://dex.cluster.example" />
            </label>
            <label>
              Client id
              <input value={clientId} onChange={(e) => setClientId(e.target.value)} placeholder="povdesk" />
            </label>
          </>
        )}
        <label>
          CA bundle (PEM file; empty: the system's CAs)
          <input value={ca} onChange={(e) => setCa(e.target.value)} placeholder="/etc/ssl/cluster-ca.pem" spellCheck={false} />
        </label>
        <ErrorAlert error={error} />
        <div className="row">
          <button onClick={() => void save('remote')} disabled={busy || !url || (auth === 'oidc' && (!issuer.trim() || !clientId.trim()))}>
            Use remote
          </button>
          {remote && connection.auth === 'oidc' && connection.tokenSet && (
            <>
              <button onClick={() => void startLogin()} disabled={login !== null}>
                Log in again
              </button>
              <button onClick={() => void logout()}>Log out</button>
            </>
          )}
          <button onClick={() => void save('local')} disabled={busy || connection?.mode === 'local'}>
            Use local
          </button>
        </div>
      </div>
    </details>
  );
}

/** Polls jobs.get until the login job ends (the page's job list follows it too). */
async function waitForJob(id: string) {
  for (;;) {
    const { job } = await api.call('jobs.get', { id });
    if (job.state !== 'queued' && job.state !== 'running') return job;
    await new Promise((r) => setTimeout(r, 500));
  }
}
