import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import type { SettingsView } from '../../../shared/contract';
import { api, errorText } from '../api';
import { useSettings } from '../state/settings';
import { ErrorAlert } from '../components/error-alert';
import { useDraft } from '../components/use-draft';

/** What the Skytap form holds right now (saved or not): Test connection tests these. */
export interface SkytapForm {
  username: string;
  apiToken: string;
  url: string;
  projectId: string;
}

/** Extra panels other domains add to Settings (e.g. Test connection under Skytap, given the form). */
export const settingsSlots: { skytap: ((form: SkytapForm) => ReactNode)[]; more: (() => ReactNode)[] } = { skytap: [], more: [] };

/** The Skytap form's fields as the core holds them (the token is write-only and never comes back). */
const skytapFields = (v: SettingsView) => ({ username: v.skytap.username, url: v.skytap.url, projectId: v.skytap.projectId });

export default function SettingsPage() {
  const { view, error, load, set } = useSettings();
  const { draft, edit, seed } = useDraft({ username: '', url: '', projectId: '' });
  const [token, setToken] = useState('');
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [info, setInfo] = useState<{ version: string; home: string; logs: string } | null>(null);

  useEffect(() => {
    void load();
    api.call('app.info', {}).then(setInfo, () => undefined);
  }, [load]);
  useEffect(() => {
    if (view) seed(skytapFields(view));
  }, [view, seed]);

  /** The core's answer to a save or a removal: the form shows what is now stored. */
  const took = (next: SettingsView, text: string) => {
    seed(skytapFields(next), { saved: true });
    set(next);
    setToken('');
    setStatus({ kind: 'ok', text });
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    try {
      const next = await api.call('settings.saveSkytap', {
        username: draft.username.trim(),
        url: draft.url.trim() || undefined,
        projectId: draft.projectId.trim(),
        ...(token ? { apiToken: token } : {}),
      });
      took(next, 'Saved.');
    } catch (err) {
      setStatus({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(false);
    }
  };

  // username, token, URL and project: the app is as on first launch (the POVs page offers a rehearsal)
  const removeAccount = () => {
    if (!window.confirm('Remove the Skytap account (username, API token, URL and project) from this app? POVs already made stay listed.'))
      return;
    api.call('settings.removeSkytap', {}).then(
      (next) => took(next, 'Skytap account removed.'),
      (err) => setStatus({ kind: 'error', text: errorText(err) }),
    );
  };

  const copyDiagnostics = async () => {
    try {
      const { text } = await api.call('app.diagnostics', {});
      await navigator.clipboard.writeText(text);
      setStatus({ kind: 'ok', text: `Diagnostics copied (${text.length} characters).` });
    } catch (err) {
      setStatus({ kind: 'error', text: `Could not copy diagnostics: ${errorText(err)}` });
    }
  };

  return (
    <section className="page">
      <header className="page-head">
        <h2>Settings</h2>
      </header>
      <ErrorAlert error={error} />
      <div className="panel">
        <h3>Skytap</h3>
        <p className="muted">
          Skytap authenticates with your username and the <strong>API security token</strong> from your Skytap Account page — not your
          account password.
        </p>
        <form onSubmit={save} className="form" aria-label="Skytap credentials">
          <label>
            Username
            <input value={draft.username} onChange={(e) => edit('username', e.target.value)} required autoComplete="username" />
          </label>
          <label>
            API token
            <input
              type="password"
              value={token}
              onChange={(e) => setToken(e.target.value)}
              placeholder={view?.skytap.tokenSet ? 'token set — leave empty to keep it' : 'paste the API security token'}
              autoComplete="off"
            />
          </label>
          <label>
            API URL
            <input value={draft.url} onChange={(e) => edit('url', e.target.value)} placeholder="https://cloud.skytap.com" />
          </label>
          <label>
            Project ID (optional)
            <input value={draft.projectId} onChange={(e) => edit('projectId', e.target.value)} inputMode="numeric" />
          </label>
          <div className="row">
            <button type="submit" className="primary" disabled={busy}>
              Save
            </button>
            <span data-testid="token-status" className={view?.skytap.tokenSet ? 'ok' : 'muted'}>
              {view ? (view.skytap.tokenSet ? 'token set' : 'token not set') : ''}
            </span>
            {view?.skytap.tokenSet && (
              <button
                type="button"
                onClick={() => api.call('settings.clearSkytapToken', {}).then(set, (e) => setStatus({ kind: 'error', text: errorText(e) }))}
              >
                Remove token
              </button>
            )}
            {view && (view.skytap.username !== '' || view.skytap.tokenSet) && (
              <button type="button" className="danger" onClick={removeAccount}>
                Remove Skytap account
              </button>
            )}
          </div>
          {view && view.skytap.fromEnv.length > 0 && (
            <p className="warn">Overridden in this process by {view.skytap.fromEnv.join(', ')} (never saved).</p>
          )}
          {status && (
            <p className={status.kind === 'ok' ? 'ok' : 'error'} role={status.kind === 'error' ? 'alert' : 'status'}>
              {status.text}
            </p>
          )}
        </form>
        {settingsSlots.skytap.map((Slot, i) => (
          <div key={i}>{Slot({ ...draft, apiToken: token })}</div>
        ))}
      </div>
      <div className="panel">
        <h3>Keychain</h3>
        {view && (
          <p data-testid="keyring-backend">
            Backend: <strong>{view.keyring.backend === 'keytar' ? 'OS keychain' : 'memory only (this run)'}</strong> —{' '}
            {view.keyring.message}
            {view.keyring.remedy && <span className="warn"> {view.keyring.remedy}</span>}
          </p>
        )}
      </div>
      {settingsSlots.more.map((Slot, i) => (
        <div key={i}>{Slot()}</div>
      ))}
      <div className="panel">
        <h3>About</h3>
        {info && (
          <dl className="facts">
            <dt>Version</dt>
            <dd>{info.version}</dd>
            <dt>Data</dt>
            <dd>
              <code>{info.home}</code>
            </dd>
            <dt>Logs</dt>
            <dd>
              <code>{info.logs}</code>
            </dd>
          </dl>
        )}
        <button onClick={copyDiagnostics}>Copy diagnostics</button>
      </div>
    </section>
  );
}
