import { useState } from 'react';
import type { PovView } from '../../../../shared/contract/pov';
import { api, errorText } from '../../api';
import { ErrorAlert } from '../error-alert';
import { bothZones } from './time';

/**
 * A local POV's own switches on its page: "Internet access" (off by default: the VMs reach only
 * each other; on, they reach the outside through this machine, never its loopback; each VM follows
 * it from its next start), and "Save clean state" / "Reset to clean state" (pov.snapshot /
 * pov.reset: every VM's disk, vTPM state and firmware variables, saved while stopped) with the
 * time of the saved state. Kept apart from the page's readiness UI.
 */
export function LocalPovSwitches({ pov, onChanged }: { pov: PovView; onChanged(): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const idle = pov.state === 'active' && pov.activeJobId === null && !busy;

  async function run(fn: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      onChanged();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="panel row local-pov-switches" aria-label="This laptop's POV switches">
      <label title="The VMs reach the outside through this machine's NAT (never its loopback). Each VM follows it from its next start.">
        <input
          type="checkbox"
          checked={pov.internetAccess ?? false}
          disabled={busy || pov.state === 'destroyed'}
          onChange={(e) => void run(() => api.call('pov.setInternetAccess', { povId: pov.id, on: e.target.checked }))}
        />{' '}
        Internet access
      </label>
      <button
        disabled={!idle}
        onClick={() => void run(() => api.call('pov.snapshot', { id: pov.id }))}
        title="Stops the VMs, saves every disk, vTPM and firmware variables, starts them again"
      >
        Save clean state
      </button>
      <button
        disabled={!idle || !pov.cleanSnapshotAt}
        onClick={() => void run(() => api.call('pov.reset', { id: pov.id }))}
        title="Stops the VMs, puts back the saved state, starts them again"
      >
        Reset to clean state
      </button>
      <span className="small muted" data-testid="clean-snapshot-at">
        {pov.cleanSnapshotAt ? `clean state of ${bothZones(pov.cleanSnapshotAt, pov.customerTz ?? null)}` : 'no clean state saved'}
      </span>
      <ErrorAlert error={error} />
    </div>
  );
}
