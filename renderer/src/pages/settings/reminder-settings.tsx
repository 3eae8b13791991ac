import { useEffect, useState, type FormEvent } from 'react';
import type { NotifySettings } from '../../../../shared/contract/notify';
import { AUTO_DELETE_MAX_DAYS, LADDER_MAX_HOURS, LADDER_MAX_STEPS } from '../../../../shared/contract/values';
import { api, errorText } from '../../api';
import { useDraft } from '../../components/use-draft';
import { reveal, sectionFromHash } from '../../nav';
import { useNotify } from '../../state/notify';

/** The form's fields as the core holds them. */
const fields = (s: NotifySettings) => ({ hours: s.ladderHours.join(', '), days: String(s.autoDeleteDays) });

/**
 * Settings → Reminders and auto-delete: the warning ladder's steps (hours before a POV's deletion),
 * the auto-delete time a new POV gets, and do-not-disturb (also in the notification list, for a
 * quick toggle). The core checks the values again and says what it refused.
 */
export default function ReminderSettings() {
  const { settings, load, setDnd } = useNotify();
  const { draft, edit, seed } = useDraft({ hours: '', days: '' });
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  // opened from the notification list (`#/settings/reminders`): show this panel
  useEffect(() => {
    if (sectionFromHash('settings') === 'reminders') reveal('reminders');
  }, []);
  useEffect(() => {
    if (!useNotify.getState().settings) void load();
  }, [load]);
  useEffect(() => {
    if (settings) seed(fields(settings));
  }, [settings, seed]);

  async function save(e: FormEvent) {
    e.preventDefault();
    setStatus(null);
    const ladderHours = draft.hours
      .split(/[\s,]+/)
      .filter(Boolean)
      .map(Number);
    const steps = new Set(ladderHours).size;
    const wholeHours = ladderHours.every((h) => Number.isInteger(h) && h >= 1 && h <= LADDER_MAX_HOURS);
    if (steps === 0 || steps > LADDER_MAX_STEPS || !wholeHours)
      return setStatus({
        kind: 'error',
        text:
          `Warning steps are 1 to ${LADDER_MAX_STEPS} whole hours before deletion, ` +
          `each at most ${LADDER_MAX_HOURS} (90 days), e.g. 168, 72, 24, 1.`,
      });
    const days = Number(draft.days);
    if (!Number.isInteger(days) || days < 1 || days > AUTO_DELETE_MAX_DAYS)
      return setStatus({ kind: 'error', text: `Auto-delete days is a whole number of days, 1 to ${AUTO_DELETE_MAX_DAYS}.` });
    setBusy(true);
    try {
      const next = await api.call('notify.setSettings', { ladderHours, autoDeleteDays: days });
      useNotify.setState({ settings: next });
      seed(fields(next), { saved: true });
      setStatus({ kind: 'ok', text: 'Saved. Warnings follow the new steps; POVs made from now on get the new auto-delete time.' });
    } catch (err) {
      setStatus({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel" id="reminders" aria-label="Reminders and auto-delete">
      <h3>Reminders and auto-delete</h3>
      <p className="muted">
        Each POV warns at these hours before its auto-delete time; the last warning is urgent and stays on screen until dismissed.
      </p>
      <form className="form" aria-label="Warning settings" onSubmit={(e) => void save(e)}>
        <label>
          Warn at (hours before deletion)
          <input aria-label="Warning steps" value={draft.hours} onChange={(e) => edit('hours', e.target.value)} size={14} />
        </label>
        <label>
          New POVs auto-delete after (days)
          <input
            aria-label="Auto-delete days"
            type="number"
            min={1}
            max={AUTO_DELETE_MAX_DAYS}
            value={draft.days}
            onChange={(e) => edit('days', e.target.value)}
          />
        </label>
        <div className="row">
          <button type="submit" className="primary" disabled={busy || !settings}>
            Save
          </button>
        </div>
      </form>
      <label className="row">
        <input
          type="checkbox"
          checked={settings?.doNotDisturb ?? false}
          disabled={!settings}
          onChange={(e) => void setDnd(e.target.checked).catch((err: unknown) => setStatus({ kind: 'error', text: errorText(err) }))}
        />
        Do not disturb (only urgent warnings pop up; the rest wait in the notification list)
      </label>
      {status && (
        <p className={status.kind === 'ok' ? 'ok' : 'error'} role={status.kind === 'error' ? 'alert' : 'status'}>
          {status.text}
        </p>
      )}
    </section>
  );
}
