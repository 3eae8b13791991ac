import { useState } from 'react';
import type { VmRecord } from '../../../../shared/contract/vm';
import { api, errorText } from '../../api';
import { LIVE_VM_STATES } from '../../../../shared/vm-states';
import { allowed, seconds } from '../../state/vms';
import { ErrorAlert } from '../error-alert';

const TONE: Record<string, string> = {
  ready: 'ok',
  running: 'ok',
  booting: 'warn',
  attesting: 'warn',
  creating: 'warn',
  stopping: 'warn',
  deleting: 'warn',
  stopped: 'muted',
  failed: 'error',
};

export function VmStateBadge({ state }: { state: VmRecord['state'] }) {
  return (
    <span className={`badge vm-state ${TONE[state] ?? ''}`} data-testid="vm-state">
      {state}
    </span>
  );
}

/** VMs with state badges, durations and the actions their state allows; delete asks first. */
export function VmList({
  vms,
  selected,
  onSelect,
  onChanged,
  onConsole,
  onSsh,
}: {
  vms: VmRecord[];
  selected: string | null;
  onSelect: (id: string) => void;
  onChanged: () => void;
  /** Opens the VM's console as a tab on the Terminals page (read-only tail, or interactive). */
  onConsole?: (vm: VmRecord, interactive: boolean) => void;
  /** Opens a terminal tab signed in as root through the VM's forwarded SSH port with the vm-manager's key. */
  onSsh?: (vm: VmRecord) => void;
}) {
  const [confirm, setConfirm] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const act = async (vm: VmRecord, what: 'start' | 'stop' | 'reboot' | 'delete') => {
    setBusy(vm.id);
    setError(null);
    try {
      if (what === 'delete') await api.call('vm.delete', { id: vm.id });
      else await api.call(`vm.${what}`, { id: vm.id });
      setConfirm(null);
    } catch (e) {
      setError(`${what} ${vm.name}: ${errorText(e)}`);
    } finally {
      setBusy(null);
      onChanged();
    }
  };

  return (
    <>
      <ErrorAlert error={error} />
      <table className="table vm-list" aria-label="VMs">
        <thead>
          <tr>
            <th>Name</th>
            <th>State</th>
            <th>Image</th>
            <th>Size</th>
            <th title="create → QEMU running / first guest contact / ready">Install · boot · ready</th>
            <th>Attestation</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {vms.map((vm) => {
            const can = allowed(vm.state);
            const off = busy === vm.id;
            return (
              <tr key={vm.id} className={selected === vm.id ? 'vm-selected' : ''} data-vm={vm.name}>
                <td>
                  <button className="link" onClick={() => onSelect(vm.id)}>
                    {vm.name}
                  </button>
                  <div className="muted small">
                    {vm.id}
                    {vm.ip && (
                      <span data-testid="vm-ip" title="its address on its network">
                        {' '}
                        · {vm.ip}
                      </span>
                    )}
                  </div>
                </td>
                <td>
                  <VmStateBadge state={vm.state} />
                  {vm.lastError && (
                    <div className="error small vm-lasterror" title={vm.lastError}>
                      {vm.lastError.split('\n')[0]}
                    </div>
                  )}
                </td>
                <td>{vm.image}</td>
                <td className="small">
                  {vm.cpus} CPU · {vm.memoryMib} MiB · {vm.diskGib} GiB
                </td>
                <td className="small">
                  {seconds(vm.durations.installSeconds)} · {seconds(vm.durations.bootSeconds)} · {seconds(vm.durations.readySeconds)}
                </td>
                <td className="small">
                  {!vm.attestation.required
                    ? 'not required'
                    : vm.attestation.readyVerified
                      ? 'verified'
                      : vm.attestation.initrdVerified === false
                        ? 'failed'
                        : vm.attestation.userDataReleased
                          ? 'initrd verified'
                          : 'pending'}
                </td>
                <td>
                  {confirm === vm.id ? (
                    <div className="row vm-confirm" role="group" aria-label={`Confirm delete ${vm.name}`}>
                      <span className="small">Delete {vm.name}? Its disk, TPM state and console go too.</span>
                      <button className="danger" disabled={off} onClick={() => act(vm, 'delete')}>
                        Delete VM
                      </button>
                      <button onClick={() => setConfirm(null)}>Keep</button>
                    </div>
                  ) : (
                    <div className="vm-actions">
                      <div className="vm-actions-line">
                        <button disabled={!can.start || off} onClick={() => act(vm, 'start')}>
                          Start
                        </button>
                        <button disabled={!can.stop || off} onClick={() => act(vm, 'stop')}>
                          Stop
                        </button>
                        <button disabled={!can.reboot || off} onClick={() => act(vm, 'reboot')}>
                          Reboot
                        </button>
                        <button className="danger" disabled={!can.delete || off} onClick={() => setConfirm(vm.id)}>
                          Delete
                        </button>
                      </div>
                      <div className="vm-actions-line">
                        {onConsole && LIVE_VM_STATES.includes(vm.state) && (
                          <>
                            <button
                              onClick={() => onConsole(vm, false)}
                              title="A live, read-only tail of the serial console on the Terminals page"
                            >
                              Open console
                            </button>
                            <button onClick={() => onConsole(vm, true)} title="Type into the VM's serial line on the Terminals page">
                              Interactive console
                            </button>
                          </>
                        )}
                        {onSsh && vm.sshPort !== null && LIVE_VM_STATES.includes(vm.state) && (
                          <button
                            onClick={() => onSsh(vm)}
                            title={
                              `A terminal signed in as root through 127.0.0.1:${vm.sshPort} (the guest's port 22) with the ` +
                              `vm-manager's key for ${vm.name}`
                            }
                          >
                            SSH
                          </button>
                        )}
                      </div>
                    </div>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}
