import { useId, useMemo, useState } from 'react';
import type { PovView } from '../../../../shared/contract/pov';
import { api, errorText } from '../../api';
import { knownTimeZones, seTimeZone } from './time';
import { ErrorAlert } from '../error-alert';

/** A text input for an IANA zone with every zone the renderer knows as suggestions. */
export function TimeZoneInput({ value, onChange, label }: { value: string; onChange(v: string): void; label: string }) {
  const list = useId();
  const zones = useMemo(knownTimeZones, []);
  return (
    <>
      <input
        aria-label={label}
        list={list}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        placeholder="e.g. America/New_York"
        size={22}
        spellCheck={false}
      />
      <datalist id={list}>
        {zones.map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
    </>
  );
}

/**
 * The POV page's customer time zone: shown beside the SE's wherever the POV shows a time. The
 * core checks the name (an IANA zone) and stores its canonical spelling; a bad one changes nothing.
 */
export function CustomerTzField({ pov, onChanged }: { pov: PovView; onChanged(): void }) {
  const saved = pov.customerTz ?? '';
  const [value, setValue] = useState(saved);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const se = seTimeZone();

  async function save(customerTz: string | null) {
    setBusy(true);
    setError(null);
    try {
      const r = await api.call('pov.setCustomerTz', { povId: pov.id, customerTz });
      setValue(r.pov.customerTz ?? '');
      onChanged();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="row customer-tz"
      aria-label="Customer time zone"
      onSubmit={(e) => {
        e.preventDefault();
        void save(value.trim() === '' ? null : value.trim());
      }}
    >
      <span>Customer time zone</span>
      <TimeZoneInput label="Customer time zone" value={value} onChange={setValue} />
      <button type="submit" disabled={busy || value.trim() === saved}>
        Save
      </button>
      {saved && (
        <button type="button" disabled={busy} onClick={() => void save(null)}>
          Clear
        </button>
      )}
      <span className="small muted" data-testid="customer-tz-note">
        {saved
          ? saved === se
            ? `the same as yours (${se})`
            : `times show yours (${se}) and the customer's`
          : `not set: times show yours (${se}) only`}
      </span>
      <ErrorAlert error={error} />
    </form>
  );
}
