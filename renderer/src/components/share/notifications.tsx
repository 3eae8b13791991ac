import { useEffect, useRef, useState } from 'react';
import type { NotificationView } from '../../../../shared/contract/notify';
import { api } from '../../api';
import { useNotify } from '../../state/notify';
import { usePovs } from '../../state/pov';
import { withZones } from '../pov/time';
import { navigate } from '../../nav';
import { openPov } from './open-pov';
import './share.css';

/** Browser mode shows OS notifications through the Web Notifications API once the user allows it. */
function webNotify(n: NotificationView): void {
  if (api.transport !== 'ws' || typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
  // the body's instants in the SE's zone and the POV's customer zone, as in the in-app list
  const tz = n.povId ? (usePovs.getState().povs?.find((p) => p.id === n.povId)?.customerTz ?? null) : null;
  const note = new Notification(n.title, { body: withZones(n.body, tz), tag: n.id, requireInteraction: n.urgent });
  note.onclick = () => {
    window.focus();
    if (n.povId) openPov(n.povId);
    note.close();
  };
}

/** The bell, drawn by the app (no emoji: a machine without an emoji font shows an empty box). */
function BellIcon() {
  return (
    <svg className="icon" width="16" height="16" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <path
        d={
          'M8 1.5a1 1 0 0 1 1 1v.6a4.5 4.5 0 0 1 3.5 4.4v2.8l1.2 1.6a.6.6 0 0 1-.5 1' +
          'H2.8a.6.6 0 0 1-.5-1l1.2-1.6V7.5A4.5 4.5 0 0 1 7 3.1v-.6a1 1 0 0 1 1-1Z ' +
          'M6.3 13.9h3.4a1.7 1.7 0 0 1-3.4 0Z'
        }
        fill="currentColor"
      />
    </svg>
  );
}

/**
 * The bell (unread count, in the sidebar), the in-app list (below dialogs; Escape closes it and
 * gives focus back to the bell), do-not-disturb, and toasts. In Electron the main
 * process shows the OS notification (main/electron/notifications.ts); here only the toast.
 */
export function Notifications() {
  const { items, unread, toasts, settings, error, load, follow, dismiss, markAllRead, setDnd } = useNotify();
  const [open, setOpen] = useState(false);
  // a warning's deletion time in the SE's zone and, when the POV list knows it, the customer's
  const povs = usePovs((s) => s.povs);
  const zoneOf = (povId: string | null) => (povId ? (povs?.find((p) => p.id === povId)?.customerTz ?? null) : null);
  const [permission, setPermission] = useState(() => (typeof Notification === 'undefined' ? 'unsupported' : Notification.permission));
  useEffect(() => void load(), [load]);
  useEffect(() => follow(webNotify), [follow]);
  // Electron: a click on an OS notification (main/electron/notifications.ts) opens its POV
  useEffect(
    () =>
      api.subscribe('notify.clicked', '*', (n) => {
        if (n.povId) openPov(n.povId);
      }),
    [],
  );

  const bell = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      bell.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [open]);

  const act = (n: NotificationView) => {
    if (n.povId) openPov(n.povId);
    dismiss(n.id);
    setOpen(false);
  };
  return (
    <>
      <button
        ref={bell}
        className="notify-bell"
        aria-label={`Notifications (${unread} unread)`}
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        <BellIcon /> <span>Notifications</span>
        {unread > 0 && <span className="badge notify-count">{unread}</span>}
      </button>
      {open && (
        <section className="notify-panel" aria-label="Notifications">
          <div className="row">
            <strong>Notifications</strong>
            <label className="small">
              <input type="checkbox" checked={settings?.doNotDisturb ?? false} onChange={(e) => void setDnd(e.target.checked)} /> Do not
              disturb
            </label>
            <button className="link" onClick={() => void markAllRead()}>
              Mark all read
            </button>
          </div>
          {api.transport === 'ws' && permission === 'default' && (
            <button onClick={() => void Notification.requestPermission().then(setPermission)}>Allow desktop notifications</button>
          )}
          <button
            className="link small"
            onClick={() => {
              setOpen(false);
              navigate('settings', 'reminders');
            }}
          >
            Warning steps and auto-delete days (Settings)
          </button>
          {error && <p className="error">{error}</p>}
          {items.length === 0 && <p className="muted small">Nothing yet.</p>}
          <ul>
            {items.map((n) => (
              <li key={n.id} className={n.withdrawnAt ? 'withdrawn' : ''} data-testid="notification">
                <button className="link" onClick={() => act(n)} disabled={!n.povId}>
                  {n.urgent && <span className="badge bad">urgent</span>} {n.title}
                  {n.count > 1 && <span className="badge muted">×{n.count}</span>}
                </button>
                <div className="small muted">
                  {withZones(n.body, zoneOf(n.povId))} · {new Date(n.createdAt).toLocaleString()}
                  {n.held && ' · held (do not disturb)'}
                  {n.withdrawnAt && ' · withdrawn'}
                </div>
              </li>
            ))}
          </ul>
        </section>
      )}
      <div className="notify-toasts" aria-live="polite">
        {toasts.map((n) => (
          <div key={n.id} className={`notify-toast${n.urgent ? ' urgent' : ''}`} role="status" data-testid="toast">
            <button className="link" onClick={() => act(n)}>
              <strong>{n.title}</strong>
            </button>
            <div className="small">{withZones(n.body, zoneOf(n.povId))}</div>
            <button className="link small" onClick={() => dismiss(n.id)}>
              Dismiss
            </button>
          </div>
        ))}
      </div>
    </>
  );
}
