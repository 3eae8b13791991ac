import { useState } from 'react';
import { errorText } from '../../api';
import { useTerminals } from '../../state/terminals';
import { ErrorAlert } from '../error-alert';
import { jumpText, parseJump } from './jump';
import { OpensshPicker } from './openssh-picker';
import { connectFailure, initialSize } from './session-status';

/** An ad-hoc connection: host, port, user, how to sign in, jump hosts. */
export function QuickConnect() {
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
    open(
      { target: { host: host.trim(), port: Number(port), username: user.trim(), auth, jump: hops }, ...initialSize() },
      `${user}@${host}`,
    )
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
          Password{' '}
          <input type="password" value={secret} onChange={(e) => setSecret(e.target.value)} required autoComplete="current-password" />
        </label>
      ) : (
        <>
          <label className="wide">
            Private key (OpenSSH){' '}
            <textarea value={secret} onChange={(e) => setSecret(e.target.value)} rows={3} required spellCheck={false} />
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
