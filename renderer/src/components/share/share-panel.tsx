import { useCallback, useEffect, useState } from 'react';
import type { PovView, PovVmView } from '../../../../shared/contract/pov';
import type { ShareView } from '../../../../shared/contract/share';
import { handoutText, isTimeZone, relativeTime } from '../../../../shared/share-handout';
import { api, errorText } from '../../api';
import { bothZones, seTimeZone } from '../pov/time';
import { copyText, fromLocalInput, toLocalInput } from './datetime';
import { ErrorAlert } from '../error-alert';

/**
 * Share panel: one customer link (Skytap sharing portal) for the whole environment, always with a
 * generated password kept in the keychain. The password is shown once after Create/Rotate; Show
 * reads it back from the keychain. The handout is plain text for an e-mail.
 */
export function SharePanel({ pov, vms }: { pov: PovView; vms: PovVmView[] }) {
  const [shares, setShares] = useState<ShareView[] | null>(null);
  const [idleWarning, setIdleWarning] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** Passwords revealed in this view (after create/rotate, or Show). Never stored anywhere else. */
  const [shown, setShown] = useState<Record<string, string>>({});
  const [excludeControl, setExcludeControl] = useState(false);
  const [expiry, setExpiry] = useState(() => (pov.autoDelete?.at ? toLocalInput(pov.autoDelete.at) : ''));
  // The handout speaks the customer's zone: the POV's when set, else the SE's (editable here).
  const [tz, setTz] = useState(() => pov.customerTz ?? seTimeZone());
  useEffect(() => {
    if (pov.customerTz) setTz(pov.customerTz);
  }, [pov.customerTz]);
  const [copied, setCopied] = useState<string | null>(null);
  const [now, setNow] = useState(() => Date.now());

  const load = useCallback(async () => {
    try {
      const r = await api.call('share.list', { povId: pov.id });
      setShares(r.shares);
      setIdleWarning(r.idleWarning);
    } catch (e) {
      setError(errorText(e));
    }
  }, [pov.id]);
  useEffect(() => void load(), [load]);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(t);
  }, []);

  async function run<T>(f: () => Promise<T>): Promise<T | undefined> {
    setBusy(true);
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(errorText(e));
      return undefined;
    } finally {
      setBusy(false);
      void load();
    }
  }

  const controlVm = pov.controlNode.vmId;
  const live = vms.filter((v) => !v.goneAt);
  async function create() {
    const at = fromLocalInput(expiry);
    const vmIds = excludeControl && controlVm ? live.filter((v) => v.vmId !== controlVm).map((v) => v.vmId) : undefined;
    const r = await run(() => api.call('share.create', { povId: pov.id, ...(at ? { expiresAt: at } : {}), ...(vmIds ? { vmIds } : {}) }));
    if (r) setShown((s) => ({ ...s, [r.share.shareId]: r.password }));
  }

  async function copy(label: string, text: string) {
    try {
      await copyText(text);
      setCopied(label);
      setTimeout(() => setCopied((c) => (c === label ? null : c)), 2500);
    } catch (e) {
      setError(`Copy failed: ${errorText(e)}`);
    }
  }

  async function passwordOf(s: ShareView): Promise<string | undefined> {
    if (shown[s.shareId]) return shown[s.shareId];
    const r = await run(() => api.call('share.password', { povId: pov.id, shareId: s.shareId }));
    if (r) setShown((x) => ({ ...x, [s.shareId]: r.password }));
    return r?.password;
  }

  const current = (shares ?? []).filter((s) => !s.goneAt);
  const gone = (shares ?? []).filter((s) => s.goneAt);
  const canShare = pov.state === 'active' && pov.envId !== null;
  return (
    <section className="panel share-box" aria-label="Share">
      <h3>Share with the customer</h3>
      {idleWarning && (
        <p className="banner warn" role="alert" data-testid="idle-warning">
          {idleWarning}
        </p>
      )}
      <ErrorAlert error={error} />
      {current.map((s) => (
        <div key={s.shareId} className="share-link" data-testid="share-link">
          <div className="row">
            <strong>Link</strong>
            <a className="mono ellipsis" href={s.url ?? undefined} target="_blank" rel="noreferrer">
              {s.url ?? '(no link from Skytap)'}
            </a>
            {s.url && <button onClick={() => void copy(`url-${s.shareId}`, s.url!)}>Copy link</button>}
            {!s.managed && <span className="badge muted">not managed here</span>}
          </div>
          <div className="row">
            <strong>Password</strong>
            <span className="mono" aria-label="Share password">
              {shown[s.shareId] ?? '••••••••••••••••••••••••'}
            </span>
            {s.passwordStored && !shown[s.shareId] && (
              <button disabled={busy} onClick={() => void passwordOf(s)}>
                Show
              </button>
            )}
            {s.passwordStored && (
              <button disabled={busy} onClick={() => void passwordOf(s).then((p) => (p ? copy(`pw-${s.shareId}`, p) : undefined))}>
                Copy password
              </button>
            )}
          </div>
          <div className="row small">
            <span>
              Expires{' '}
              {s.expiresAt ? (
                <>
                  <strong title={s.expiresAt}>{relativeTime(s.expiresAt, now)}</strong> (
                  <span data-testid="share-expires-at">{bothZones(s.expiresAt, pov.customerTz)}</span>)
                </>
              ) : (
                'never'
              )}
            </span>
            {s.runtimeLeftSeconds !== null && <span>· runtime left {Math.round(s.runtimeLeftSeconds / 360) / 10} h</span>}
            <span className="muted">· {s.vmIds.length} VM(s)</span>
          </div>
          <div className="row">
            <button
              disabled={busy}
              onClick={() => {
                const at = fromLocalInput(expiry);
                if (at) void run(() => api.call('share.extend', { povId: pov.id, shareId: s.shareId, expiresAt: at }));
              }}
            >
              Extend to the expiry below
            </button>
            <button
              disabled={busy}
              onClick={() =>
                void run(() => api.call('share.rotatePassword', { povId: pov.id, shareId: s.shareId })).then(
                  (r) => r && setShown((x) => ({ ...x, [s.shareId]: r.password })),
                )
              }
            >
              Rotate password
            </button>
            <button
              className="danger"
              disabled={busy}
              onClick={() => {
                if (window.confirm('Revoke this link? The customer loses access at once.'))
                  void run(() => api.call('share.revoke', { povId: pov.id, shareId: s.shareId }));
              }}
            >
              Revoke
            </button>
            {s.url && s.passwordStored && s.expiresAt && (
              <button
                disabled={busy || !isTimeZone(tz)}
                onClick={() =>
                  void passwordOf(s).then((p) =>
                    p === undefined
                      ? undefined
                      : copy(
                          `handout-${s.shareId}`,
                          handoutText({
                            povName: pov.name,
                            url: s.url!,
                            password: p,
                            expiresAt: s.expiresAt!,
                            timeZone: tz,
                            runtimeLimitMinutes: s.runtimeLimitMinutes,
                          }),
                        ),
                  )
                }
              >
                Copy handout
              </button>
            )}
          </div>
        </div>
      ))}
      {copied && (
        <p className="small ok" role="status">
          Copied.
        </p>
      )}
      <div className="row">
        <label>
          Expiry <input type="datetime-local" aria-label="Share link expiry" value={expiry} onChange={(e) => setExpiry(e.target.value)} />
        </label>
        <label>
          Customer time zone <input aria-label="Customer time zone" value={tz} onChange={(e) => setTz(e.target.value)} size={18} />
        </label>
        {controlVm && (
          <label>
            <input type="checkbox" checked={excludeControl} onChange={(e) => setExcludeControl(e.target.checked)} /> Leave out the control
            node
          </label>
        )}
        {current.length === 0 && (
          <button className="primary" disabled={busy || !canShare} onClick={() => void create()}>
            Create share link
          </button>
        )}
      </div>
      {!isTimeZone(tz) && <p className="error small">“{tz}” is not a time zone (e.g. America/Chicago).</p>}
      {gone.length > 0 && <p className="small muted">{gone.length} earlier link(s) revoked or gone from Skytap.</p>}
    </section>
  );
}
