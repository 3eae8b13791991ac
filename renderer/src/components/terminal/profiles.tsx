import { useCallback, useEffect, useState } from 'react';
import type { SshProfile } from '../../../../shared/contract/ssh';
import { KEEPALIVE_DEFAULT_SEC, KEEPALIVE_MAX_SEC } from '../../../../shared/contract/values';
import { api, errorText } from '../../api';
import { useTerminals } from '../../state/terminals';
import { ErrorAlert } from '../error-alert';
import { jumpText, parseJump } from './jump';
import { OpensshPicker } from './openssh-picker';
import { initialSize } from './session-status';

const EMPTY_PROFILE_FORM = {
  name: '',
  host: '',
  port: '22',
  username: '',
  jump: '',
  cred: 'generate' as 'keep' | 'generate' | 'import' | 'password' | 'agent',
  secret: '',
  passphrase: '',
  // the contract's defaults for a new profile
  keepalive: String(KEEPALIVE_DEFAULT_SEC),
  autoReconnect: true,
};

/** Saved profiles (credentials in the keychain): connect, edit, delete, and the form for a new one. */
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
      ...EMPTY_PROFILE_FORM,
      name: p.name,
      host: p.host,
      port: String(p.port),
      username: p.username,
      jump: jumpText(p.jump),
      cred: 'keep',
      keepalive: String(p.keepaliveSec),
      autoReconnect: p.autoReconnect,
    });
  };
  const stopEditing = () => {
    setEditing(null);
    setForm(EMPTY_PROFILE_FORM);
  };
  const load = useCallback(() => {
    api
      .call('ssh.profiles.list', {})
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
      jump =
        editing && form.jump === jumpText(editing.jump)
          ? editing.jump
          : parseJump(form.jump, form.username).map((h) => ({ ...h, profileId: null }));
    } catch (err) {
      return setError(errorText(err));
    }
    const keepaliveSec = /^\d+$/.test(form.keepalive.trim()) ? Number(form.keepalive) : NaN;
    if (!(keepaliveSec <= KEEPALIVE_MAX_SEC))
      return setError(`Keepalive: "${form.keepalive}" is not a whole number of seconds from 0 (none) to ${KEEPALIVE_MAX_SEC}`);
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
    api
      .call('ssh.profiles.save', {
        ...(editing ? { id: editing.id } : {}),
        name: form.name,
        host: form.host.trim(),
        port: Number(form.port),
        username: form.username.trim(),
        credentials,
        jump,
        keepaliveSec,
        autoReconnect: form.autoReconnect,
      })
      .then(() => {
        if (editing) stopEditing();
        else setForm((f) => ({ ...f, name: '', secret: '', passphrase: '' }));
        load();
      })
      .catch((err) => setError(errorText(err)));
  };
  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) =>
    setForm((f) => ({ ...f, [k]: e.target.value }));
  return (
    <div className="ssh-profiles">
      <h3>Profiles</h3>
      {list && list.length === 0 && (
        <p className="muted">
          No saved profiles. Save one below; a generated key's public half is shown to paste into the server's authorized_keys.
        </p>
      )}
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
            <button
              className="primary"
              onClick={() => open({ profileId: p.id, ...initialSize() }, p.name).catch((e) => setError(errorText(e)))}
            >
              Connect
            </button>
            <button onClick={() => edit(p)} aria-label={`Edit ${p.name}`} disabled={editing?.id === p.id}>
              Edit
            </button>
            <button
              className="danger"
              onClick={() =>
                api
                  .call('ssh.profiles.delete', { id: p.id })
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
                ...f,
                name: h.alias,
                host: h.host,
                port: String(h.port),
                username: h.username,
                jump: jumpText(h.jump),
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
            {editing && (
              <option value="keep">
                {editing.authKind === 'agent'
                  ? 'Keep signing in with the SSH agent'
                  : `Keep the stored ${editing.authKind === 'password' ? 'password' : 'key'}`}
              </option>
            )}
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
        <label
          title={
            "Seconds between SSH keepalives; 0 sends none. A customer's firewall that drops idle connections needs one shorter " +
            'than its timeout.'
          }
        >
          Keepalive (s) <input value={form.keepalive} onChange={set('keepalive')} size={5} inputMode="numeric" />
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={form.autoReconnect}
            onChange={(e) => setForm((f) => ({ ...f, autoReconnect: e.target.checked }))}
          />{' '}
          Reconnect when the connection drops
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
            A new key replaces the stored{' '}
            {editing.authKind === 'password' ? 'password' : editing.authKind === 'agent' ? 'choice of the SSH agent' : 'key'}: paste its
            public half (shown here after saving) into the server&apos;s authorized_keys before you connect again.
          </p>
        )}
        <p className="muted small">Keys and passwords are kept in the system keychain. Agent forwarding is off.</p>
      </form>
      <ErrorAlert error={error} />
    </div>
  );
}
