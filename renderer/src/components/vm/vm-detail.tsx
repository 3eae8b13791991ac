import { useState } from 'react';
import type { VmRecord } from '../../../../shared/contract/vm';
import { errorText } from '../../api';
import { navigate } from '../../nav';
import { useTerminals } from '../../state/terminals';
import { AttestationPanel } from './attestation-panel';
import { ConsoleTail } from './console-tail';
import { VmStateBadge } from './vm-list';
import { VmTools } from './vm-tools';

/**
 * One VM's console, attestation and exec & ports, as tabs (the Local VMs page and a local POV's
 * detail page show the same panel).
 */
export function VmDetailPanel({ vm, remote, onClose }: { vm: VmRecord; remote: boolean; onClose(): void }) {
  const [tab, setTab] = useState<'console' | 'attestation' | 'tools'>('console');
  return (
    <div className="panel vm-detail">
      <header className="row">
        <h3>
          {vm.name} <VmStateBadge state={vm.state} />
        </h3>
        <div className="row vm-tabs" role="tablist">
          <button role="tab" aria-selected={tab === 'console'} onClick={() => setTab('console')}>
            Console
          </button>
          <button role="tab" aria-selected={tab === 'attestation'} onClick={() => setTab('attestation')}>
            Attestation
          </button>
          <button role="tab" aria-selected={tab === 'tools'} onClick={() => setTab('tools')}>
            Exec &amp; ports
          </button>
          <button onClick={onClose}>Close</button>
        </div>
      </header>
      {tab === 'console' && <ConsoleTail id={vm.id} />}
      {tab === 'attestation' && (
        <AttestationPanel id={vm.id} version={`${vm.state}|${vm.attestation.initrdVerified}|${vm.attestation.readyVerified}`} />
      )}
      {tab === 'tools' && <VmTools key={vm.id} vm={vm} remote={remote} />}
    </div>
  );
}

/** Opens the VM's console as a tab on the Terminals page (read-only tail, or interactive). */
export function openVmConsole(vm: { id: string; name: string }, interactive: boolean, onError: (message: string) => void): void {
  useTerminals
    .getState()
    .openVmConsole(vm.id, interactive, interactive ? `${vm.name} serial` : `${vm.name} console (read-only)`)
    .then(() => navigate('terminals'))
    .catch((e) => onError(`console of ${vm.name}: ${errorText(e)}`));
}

/** Opens a terminal tab signed in as root through the VM's forwarded SSH port with the vm-manager's key. */
export function openVmSsh(vm: { id: string; name: string; sshPort: number | null }, onError: (message: string) => void): void {
  if (vm.sshPort === null) return;
  useTerminals
    .getState()
    .openVmSsh(vm)
    .then(() => navigate('terminals'))
    .catch((e) => onError(`SSH into ${vm.name}: ${errorText(e)}`));
}
