import { useState } from 'react';
import type { NotifySettings } from '../../../../shared/contract/notify';
import { api, errorText } from '../../api';

/** The ladder's steps (hours before deletion) and a new POV's auto-delete days. */
export function NotifySettingsForm({ settings, onSaved }: { settings: NotifySettings; onSaved(s: NotifySettings): void }) {
  const [hours, setHours] = useState(settings.ladderHours.join(', '));
  const [days, setDays] = useState(String(settings.autoDeleteDays));
  const [error, setError] = useState<string | null>(null);

  async function save() {
    const ladderHours = hours
      .split(/[\s,]+/)
      .filter(Boolean)
      .map(Number);
    if (ladderHours.some((h) => !Number.isInteger(h) || h < 1)) return setError('Warning steps are whole hours, e.g. 168, 72, 24, 1.');
    try {
      onSaved(await api.call('notify.setSettings', { ladderHours, autoDeleteDays: Number(days) }));
      setError(null);
    } catch (e) {
      setError(errorText(e));
    }
  }

  return (
    <form
      className="row small"
      aria-label="Warning settings"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <label>
        Warn at (hours before deletion){' '}
        <input aria-label="Warning steps" value={hours} onChange={(e) => setHours(e.target.value)} size={14} />
      </label>
      <label>
        New POVs auto-delete after{' '}
        <input aria-label="Auto-delete days" type="number" min={1} max={365} value={days} onChange={(e) => setDays(e.target.value)} /> days
      </label>
      <button type="submit">Save</button>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}
