import { useState } from 'react';
import type { OsValue, PovVmView } from '../../../../shared/contract/pov';
import { errorText } from '../../api';
import { ErrorAlert } from '../error-alert';

/**
 * The VMs of one POV: name, OS, IP and network, published services, runstate. OS is what Skytap's
 * hardware.guestOS says unless the user chose one; the choice is stored apart and survives every
 * refresh. Published services are Skytap's NAT of a guest port to a public host:port, read from
 * the VM's interfaces: shown for the SE, never used by the wiring (they change per environment and
 * per power cycle; the POV reaches its VMs on their private addresses).
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
            <th title="Skytap's NAT of a guest port to a public host:port; the wiring uses private addresses">Published services</th>
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
              <td>
                <span className="mono">{vm.ip ?? '—'}</span>
                {vm.network && (
                  <div className="small muted" data-testid="vm-network">
                    {vm.network.name ?? 'network'}
                    {vm.network.type === 'manual' ? (
                      <span className="badge warn" title="No metadata service on a manual network: a control node here gets no bootstrap">
                        {' '}
                        manual
                      </span>
                    ) : vm.network.type ? (
                      ` (${vm.network.type})`
                    ) : (
                      ''
                    )}
                  </div>
                )}
              </td>
              <td data-testid="vm-published">
                {vm.published.length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  <ul style={{ listStyle: 'none', margin: 0, padding: 0 }}>
                    {vm.published.map((p) => (
                      <li key={`${p.internalPort}-${p.externalPort}`} className="mono small">
                        {p.internalPort} → {p.externalHost}:{p.externalPort}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>{vm.runstate ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
