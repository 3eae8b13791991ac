import { useCallback, useEffect, useState } from 'react';
import type { SshProfile, SshStatus } from '../../../shared/contract/ssh';
import { KEEPALIVE_DEFAULT_SEC, KEEPALIVE_MAX_SEC } from '../../../shared/contract/values';
import { api, errorText } from '../api';
import { HostKeyDialog } from '../components/terminal/host-key-dialog';
import { TerminalView } from '../components/terminal/terminal-view';
import { TypeIntoPanel } from '../components/terminal/type-into-panel';
import { termFor, useTerminals } from '../state/terminals';
import { jumpText, parseJump } from '../components/terminal/jump';
import { OpensshPicker } from '../components/terminal/openssh-picker';
import { ErrorAlert } from '../components/error-alert';
import { useVms } from '../state/vms';
import './terminals.css';

function statusText(s: SshStatus | null): string {
  if (!s) return 'starting';
  if (s.state === 'closed') {
    const by = { user: 'closed by you', dropped: 'connection dropped', exited: 'shell exited', refused: 'refused', failed: 'failed' }[s.closedBy ?? 'failed'];
    return s.reason && s.reason !== by ? `${by}: ${s.reason}` : by;
  }
  if (s.state === 'reconnecting') return `connection dropped${s.reason ? ` (${s.reason})` : ''}; reconnecting${s.nextRetryMs ? ` in ${Math.round(s.nextRetryMs / 1000)} s` : ''} (attempt ${s.attempt})`;
  return s.state;
}

const initialSize = () => ({ cols: 100, rows: 30 });

/** A session that closed (refused or failed) before it was ever open: why, for the form that opened it. */
export function connectFailure(s: SshStatus | null): string | null {
  if (!s || s.state !== 'closed' || (s.closedBy !== 'failed' && s.closedBy !== 'refused')) return null;
  return `Could not connect: ${statusText(s)}`;
}

function QuickConnect() {
  const open = useTerminals((s) => s.open);
  const [host, setHost] = useState('');
  const [port, setPort] = useState('22');
  const [user, setUser] = useState('');
  const [method, setMethod] = useState<'password' | 'privateKey' | 'agent'>('password');
  const [secret, setSecret] = useState('');
  const [passphrase, setPassphrase] = useState('');
  const [jump, setJump] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // the session this form opened: if it fails before ever opening, its reason shows by Connect too
  const [opened, setOpened] = useState<string | null>(null);
  const failure = useTerminals((s) => connectFailure(s.tabs.find((t) => t.sessionId === opened)?.status ?? null));
  const draft = useTerminals((s) => s.draft);
  useEffect(() => {
    if (!draft) return;
    setHost(draft.host);
    setPort(String(draft.port));
    setUser(draft.user);
    useTerminals.getState().setDraft(null);
  }, [draft]);
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    setError(null);
    let hops;
    try {
      hops = parseJump(jump, user);
    } catch (err) {
      return setError(errorText(err));
    }
    const auth =
      method === 'password'
        ? { kind: 'password' as const, password: secret }
        : method === 'agent'
          ? { kind: 'agent' as const }
          : { kind: 'privateKey' as const, privateKey: secret, ...(passphrase ? { passphrase } : {}) };
    setBusy(true);
    setOpened(null);
    open({ target: { host: host.trim(), port: Number(port), username: user.trim(), auth, jump: hops }, ...initialSize() }, `${user}@${host}`)
      .then((id) => {
        setOpened(id);
        setSecret('');
        setPassphrase('');
      })
      .catch((err) => setError(errorText(err)))
      .finally(() => setBusy(false));
  };
  return (
    <form className="ssh-form" onSubmit={submit} aria-label="Quick connect">
      <h3>Quick connect</h3>
      <OpensshPicker
        label="Fill from ~/.ssh/config"
        onPick={(h) => {
          setHost(h.host);
          setPort(String(h.port));
          setUser(h.username);
          setJump(jumpText(h.jump));
        }}
      />
      <label>
        Host <input value={host} onChange={(e) => setHost(e.target.value)} required placeholder="10.0.0.5 or vm.example" />
      </label>
      <label>
        Port <input value={port} onChange={(e) => setPort(e.target.value)} inputMode="numeric" size={6} required />
      </label>
      <label>
        User <input value={user} onChange={(e) => setUser(e.target.value)} required autoComplete="username" />
      </label>
      <label>
        Sign in with{' '}
        <select value={method} onChange={(e) => setMethod(e.target.value as 'password' | 'privateKey' | 'agent')}>
          <option value="password">Password</option>
          <option value="privateKey">Private key</option>
          <option value="agent">SSH agent (the keys ssh-add holds)</option>
        </select>
      </label>
      {method === 'agent' ? null : method === 'password' ? (
        <label>
          Password <input type="password" value={secret} onChange={(e) => setSecret(e.target.value)} required autoComplete="current-password" />
        </label>
      ) : (
        <>
          <label className="wide">
            Private key (OpenSSH) <textarea value={secret} onChange={(e) => setSecret(e.target.value)} rows={3} required spellCheck={false} />
          </label>
          <label>
            Passphrase <input type="password" value={passphrase} onChange={(e) => setPassphrase(e.target.value)} />
          </label>
        </>
      )}
      <label className="wide">
        Jump hosts <input value={jump} onChange={(e) => setJump(e.target.value)} placeholder="user@bastion:22, inner-bastion" />
      </label>
      <div className="actions">
        <button className="primary" type="submit" disabled={busy}>
          Connect
        </button>
        <ErrorAlert error={error ?? failure} />
      </div>
    </form>
  );
}

const EMPTY_PROFILE_FORM = {
  name: '', host: '', port: '22', username: '', jump: '', cred: 'generate' as 'keep' | 'generate' | 'import' | 'password' | 'agent', secret: '', passphrase: '',
  // the contract's defaults for a new profile
  keepalive: String(KEEPALIVE_DEFAULT_SEC), autoReconnect: true,
};

export function Profiles() {
  const open = useTerminals((s) => s.open);
  const [list, setList] = useState<SshProfile[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [form, setForm] = useState(EMPTY_PROFILE_FORM);
  // The profile being edited (null: a new one), as it was when Edit was pressed.
  const [editing, setEditing] = useState<SshProfile | null>(null);
  const edit = (p: SshProfile) => {
    setError(null);
    setEditing(p);
    setForm({
      ...EMPTY_PROFILE_FORM, name: p.name, host: p.host, port: String(p.port), username: p.username, jump: jumpText(p.jump), cred: 'keep',
      keepalive: String(p.keepaliveSec), autoReconnect: p.autoReconnect,
    });
  };
  const stopEditing = () => {
    setEditing(null);
    setForm(EMPTY_PROFILE_FORM);
  };
  const load = useCallback(() => {
    api.call('ssh.profiles.list', {})
      .then(setList)
      .catch((e) => setError(errorText(e)));
  }, []);
  useEffect(load, [load]);
  const save = (e: React.FormEvent) => {
    e.preventDefault();
    setError(null);
    let jump;
    try {
      // An edit that leaves the jump hosts as they were keeps them as stored (with their profiles).
      jump = editing && form.jump === jumpText(editing.jump) ? editing.jump : parseJump(form.jump, form.username).map((h) => ({ ...h, profileId: null }));
    } catch (err) {
      return setError(errorText(err));
    }
    const keepaliveSec = /^\d+$/.test(form.keepalive.trim()) ? Number(form.keepalive) : NaN;
    if (!(keepaliveSec <= KEEPALIVE_MAX_SEC)) return setError(`Keepalive: "${form.keepalive}" is not a whole number of seconds from 0 (none) to ${KEEPALIVE_MAX_SEC}`);
    const credentials =
      form.cred === 'keep'
        ? { kind: 'keep' as const }
        : form.cred === 'generate'
          ? { kind: 'generate' as const }
          : form.cred === 'password'
            ? { kind: 'password' as const, password: form.secret }
            : form.cred === 'agent'
              ? { kind: 'agent' as const }
              : { kind: 'import' as const, privateKey: form.secret, ...(form.passphrase ? { passphrase: form.passphrase } : {}) };
    api.call('ssh.profiles.save', {
      ...(editing ? { id: editing.id } : {}),
      name: form.name, host: form.host.trim(), port: Number(form.port), username: form.username.trim(), credentials, jump,
      keepaliveSec, autoReconnect: form.autoReconnect,
    })
      .then(() => {
        if (editing) stopEditing();
        else setForm((f) => ({ ...f, name: '', secret: '', passphrase: '' }));
        load();
      })
      .catch((err) => setError(errorText(err)));
  };
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) => setForm((f) => ({ ...f, [k]: e.target.value }));
  return (
    <div className="ssh-profiles">
      <h3>Profiles</h3>
      {list && list.length === 0 && <p className="muted">No saved profiles. Save one below; a generated key's public half is shown to paste into the server's authorized_keys.</p>}
      <ul className="profile-list">
        {list?.map((p) => (
          <li key={p.id}>
            <div>
              <strong>{p.name}</strong>{' '}
              <span className="muted">
                {p.username}@{p.host}:{p.port}
                {p.jump.length > 0 && ` via ${p.jump.map((j) => `${j.username}@${j.host}:${j.port}`).join(', ')}`} · {p.authKind}
              </span>
              {p.publicKey && (
                <details>
                  <summary>Public key</summary>
                  <code className="pubkey">{p.publicKey}</code>
                </details>
              )}
            </div>
            <button className="primary" onClick={() => open({ profileId: p.id, ...initialSize() }, p.name).catch((e) => setError(errorText(e)))}>
              Connect
            </button>
            <button onClick={() => edit(p)} aria-label={`Edit ${p.name}`} disabled={editing?.id === p.id}>
              Edit
            </button>
            <button
              className="danger"
              onClick={() =>
                api.call('ssh.profiles.delete', { id: p.id })
                  .then(load)
                  .catch((e) => setError(errorText(e)))
              }
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form className="ssh-form" onSubmit={save} aria-label={editing ? `Edit profile ${editing.name}` : 'New profile'}>
        {!editing && (
          <OpensshPicker
            label="Fill from ~/.ssh/config"
            onPick={(h) =>
              setForm((f) => ({
                ...f, name: h.alias, host: h.host, port: String(h.port), username: h.username, jump: jumpText(h.jump),
                keepalive: h.keepaliveSec === null ? f.keepalive : String(Math.min(h.keepaliveSec, KEEPALIVE_MAX_SEC)),
              }))
            }
          />
        )}
        <label>
          Name <input value={form.name} onChange={set('name')} required />
        </label>
        <label>
          Host <input value={form.host} onChange={set('host')} required />
        </label>
        <label>
          Port <input value={form.port} onChange={set('port')} size={6} required />
        </label>
        <label>
          User <input value={form.username} onChange={set('username')} required />
        </label>
        <label>
          Credentials{' '}
          <select value={form.cred} onChange={set('cred')}>
            {editing && <option value="keep">{editing.authKind === 'agent' ? 'Keep signing in with the SSH agent' : `Keep the stored ${editing.authKind === 'password' ? 'password' : 'key'}`}</option>}
            <option value="generate">Generate an ed25519 key</option>
            <option value="import">Import a private key</option>
            <option value="password">Password</option>
            <option value="agent">SSH agent (the keys ssh-add holds; nothing stored)</option>
          </select>
        </label>
        {form.cred === 'password' && (
          <label>
            Password <input type="password" value={form.secret} onChange={set('secret')} required />
          </label>
        )}
        {form.cred === 'import' && (
          <>
            <label className="wide">
              Private key <textarea rows={3} value={form.secret} onChange={set('secret')} required spellCheck={false} />
            </label>
            <label>
              Passphrase <input type="password" value={form.passphrase} onChange={set('passphrase')} />
            </label>
          </>
        )}
        <label className="wide">
          Jump hosts <input value={form.jump} onChange={set('jump')} placeholder="user@bastion:22" />
        </label>
        <label title="Seconds between SSH keepalives; 0 sends none. A customer's firewall that drops idle connections needs one shorter than its timeout.">
          Keepalive (s) <input value={form.keepalive} onChange={set('keepalive')} size={5} inputMode="numeric" />
        </label>
        <label className="check">
          <input type="checkbox" checked={form.autoReconnect} onChange={(e) => setForm((f) => ({ ...f, autoReconnect: e.target.checked }))} /> Reconnect
          when the connection drops
        </label>
        <div className="actions">
          <button type="submit">{editing ? 'Save changes' : 'Save profile'}</button>
          {editing && (
            <button type="button" onClick={stopEditing}>
              Cancel edit
            </button>
          )}
        </div>
        {editing && form.cred === 'generate' && (
          <p className="warn small" role="status">
            A new key replaces the stored {editing.authKind === 'password' ? 'password' : editing.authKind === 'agent' ? 'choice of the SSH agent' : 'key'}: paste its public half (shown here after saving) into
            the server&apos;s authorized_keys before you connect again.
          </p>
        )}
        <p className="muted small">Keys and passwords are kept in the system keychain. Agent forwarding is off.</p>
      </form>
      <ErrorAlert error={error} />
    </div>
  );
}

function KnownHosts() {
  const [list, setList] = useState<{ host: string; port: number; keyType: string; fingerprint: string; addedAt: string }[]>([]);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    api.call('ssh.knownHosts.list', {})
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
                    api.call('ssh.knownHosts.remove', { host: k.host, port: k.port })
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

export default function TerminalsPage() {
  const { tabs, active, prompts, error, select, close, reconnect, follow } = useTerminals();
  const [typeError, setTypeError] = useState<string | null>(null);
  const [typing, setTyping] = useState<false | 'script' | 'runner'>(false);
  useEffect(() => follow(), [follow]);
  const current = tabs.find((t) => t.sessionId === active) ?? null;
  // a local VM's console whose VM is gone: nothing to reconnect to
  const vms = useVms((s) => s.vms);
  const closed = current?.status?.state === 'closed';
  useEffect(() => {
    if (closed && current?.vmId) void useVms.getState().refresh();
  }, [closed, current?.vmId]);
  const vmGone = !!current?.vmId && vms !== null && !vms.some((v) => v.id === current.vmId);
  return (
    <section className="page terminals-page">
      <header className="page-head">
        <h2>Terminals</h2>
      </header>
      <ErrorAlert error={error} />
      {tabs.length > 0 && (
        <div className="term-tabs" role="tablist">
          {tabs.map((t) => (
            <div key={t.sessionId} className={`term-tab ${t.sessionId === active ? 'active' : ''} state-${t.status?.state ?? 'connecting'}`}>
              <button role="tab" aria-selected={t.sessionId === active} onClick={() => select(t.sessionId)}>
                {t.title}
              </button>
              <button className="link" aria-label={`Close ${t.title}`} onClick={() => void close(t.sessionId)}>
                ×
              </button>
            </div>
          ))}
        </div>
      )}
      {current && (
        <div className="term-panel">
          <div className="term-status" data-testid="term-status">
            <span className={`badge state-${current.status?.state ?? 'connecting'}`}>{statusText(current.status)}</span>
            {(current.status?.state === 'closed' || current.status?.state === 'reconnecting') && current.status.closedBy !== 'user' && !vmGone && (
              <button onClick={() => reconnect(current.sessionId).catch((e) => setTypeError(errorText(e)))}>Reconnect</button>
            )}
            {closed && vmGone && <span className="muted">the VM was destroyed: close this tab</span>}
            {(current.readOnly || current.status?.interactive === false) && (
              <span className="muted" title="A live tail of the VM's console log; open the interactive console to type">
                read-only
              </span>
            )}
            {!current.readOnly && current.status?.interactive !== false && (
              <>
                <button onClick={() => setTyping((v) => (v === 'script' ? false : 'script'))} aria-pressed={typing === 'script'}>
                  Type script…
                </button>
                <button
                  onClick={() => setTyping('runner')}
                  title="Types the template runner (Templates page) line by line, then compares sha256sum on the other side"
                >
                  Type runner script
                </button>
              </>
            )}
            {typeError && <span className="error">{typeError}</span>}
          </div>
          {typing && (
            <TypeIntoPanel
              key={`${current.sessionId}-${typing}`}
              sessionId={current.sessionId}
              runner={typing === 'runner'}
              onClose={() => setTyping(false)}
            />
          )}
          {termFor(current.sessionId) && <TerminalView key={current.sessionId} sessionId={current.sessionId} />}
        </div>
      )}
      {tabs.length === 0 && <p className="muted">No terminals open. Connect below or from a profile.</p>}
      <div className="ssh-columns">
        <QuickConnect />
        <Profiles />
      </div>
      <KnownHosts />
      {prompts[0] && <HostKeyDialog key={prompts[0].promptId} prompt={prompts[0]} />}
    </section>
  );
}
