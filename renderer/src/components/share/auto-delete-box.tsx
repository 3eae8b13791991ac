import { useEffect, useRef, useState } from 'react';
import type { PovView } from '../../../../shared/contract/pov';
import { relativeTime } from '../../../../shared/share-handout';
import { api, errorText } from '../../api';
import { bothZones } from '../pov/time';
import { fromLocalInput, toLocalInput } from './datetime';
import { ErrorAlert } from '../error-alert';

/**
 * The POV's auto-delete time (Skytap's delete_at_end schedule is what enforces it), whether the
 * schedule is armed, the next ladder warning, and Extend / Re-arm. `focusExtend` comes from a
 * clicked warning notification.
 */
export function AutoDeleteBox({ pov, focusExtend, onChanged }: { pov: PovView; focusExtend?: boolean; onChanged(): void }) {
  const a = pov.autoDelete;
  const [value, setValue] = useState(() => (a?.at ? toLocalInput(new Date(new Date(a.at).getTime() + 7 * 86_400_000).toISOString()) : ''));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (focusExtend) input.current?.focus();
  }, [focusExtend]);
  if (!a) return null;

  async function move(at: string | null) {
    if (!at) return setError('Pick a date and time.');
    setBusy(true);
    setError(null);
    try {
      await api.call('pov.setAutoDelete', { povId: pov.id, at });
      onChanged();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  const live = pov.state !== 'destroyed' && pov.state !== 'destroying';
  return (
    <section className="panel share-box" aria-label="Auto-delete">
      <h3>Auto-delete</h3>
      {a.at ? (
        <p>
          Skytap deletes this environment <strong title={a.at}>{relativeTime(a.at, Date.now())}</strong> (
          <span data-testid="auto-delete-at">{bothZones(a.at, pov.customerTz)}</span>).{' '}
          {a.status === 'armed' && <span className="badge ok">schedule armed</span>}
          {a.status === 'pending' && <span className="badge muted">arming…</span>}
        </p>
      ) : (
        <p className="muted">No auto-delete time is set.</p>
      )}
      {a.status === 'not_armed' && (
        <p className="banner warn" role="alert">
          Auto-delete not armed: {a.reason}{' '}
          {a.at && live && (
            <button disabled={busy} onClick={() => void move(a.at)}>
              Re-arm
            </button>
          )}
        </p>
      )}
      {a.nextWarning && (
        <p className="small muted">
          Next warning ({a.nextWarning.step} before):{' '}
          <span data-testid="next-warning-at">{bothZones(a.nextWarning.at, pov.customerTz)}</span>
        </p>
      )}
      {a.lastWarning && <p className="small">Last warning sent: {a.lastWarning} before deletion.</p>}
      {live && (
        <div className="row">
          <label>
            New time{' '}
            <input
              ref={input}
              type="datetime-local"
              aria-label="New auto-delete time"
              value={value}
              onChange={(e) => setValue(e.target.value)}
            />
          </label>
          <button className="primary" disabled={busy} onClick={() => void move(fromLocalInput(value))}>
            Extend
          </button>
        </div>
      )}
      <ErrorAlert error={error} />
    </section>
  );
}
