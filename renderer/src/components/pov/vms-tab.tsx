import { useState } from 'react';
import type { OsValue, PovVmView } from '../../../../shared/contract/pov';
import { errorText } from '../../api';
import { ErrorAlert } from '../error-alert';

/**
 * The VMs of one POV: name, OS, IP, runstate. OS is what Skytap's hardware.guestOS says unless
 * the user chose one; the choice is stored apart and survives every refresh.
 */
export function VmsTab({ vms, onSetOs }: { vms: PovVmView[]; onSetOs(vmId: string, os: OsValue | null): Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  if (vms.length === 0) return <p className="muted">No VMs read yet. Press Refresh VMs once the environment exists.</p>;
  return (
    <>
      <ErrorAlert error={error} />
      <table className="table" aria-label="VMs">
        <thead>
          <tr>
            <th>Name</th>
            <th>OS</th>
            <th>IP</th>
            <th>Runstate</th>
          </tr>
        </thead>
        <tbody>
          {vms.map((vm) => (
            <tr key={vm.vmId} className={vm.goneAt ? 'vm-gone' : ''} data-vm={vm.vmId}>
              <td>
                {vm.name}
                {vm.goneAt && <span className="badge muted"> gone</span>}
              </td>
              <td>
                <select
                  aria-label={`OS of ${vm.name}`}
                  value={vm.osOverride ?? ''}
                  onChange={(e) => {
                    const v = e.target.value;
                    setError(null);
                    onSetOs(vm.vmId, v === '' ? null : (v as OsValue)).catch((err) => setError(errorText(err)));
                  }}
                >
                  <option value="">Skytap says: {vm.osPlatform}</option>
                  <option value="linux">linux</option>
                  <option value="windows">windows</option>
                  <option value="unknown">unknown</option>
                </select>
                <div className="small muted" title="hardware.guestOS as Skytap reports it">
                  {vm.guestOs || 'no guestOS reported'}
                </div>
              </td>
              <td className="mono">{vm.ip ?? '—'}</td>
              <td>{vm.runstate ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
