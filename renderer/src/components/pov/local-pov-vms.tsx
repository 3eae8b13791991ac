import { useEffect, useMemo, useState } from 'react';
import type { PovVmView } from '../../../../shared/contract/pov';
import { useVms } from '../../state/vms';
import { ErrorAlert } from '../error-alert';
import { openVmConsole, openVmSsh, VmDetailPanel } from '../vm/vm-detail';
import { VmList } from '../vm/vm-list';

/**
 * A local POV's VMs as the vm-manager has them: the Local VMs page's list (state, durations,
 * attestation, actions) and, for the one picked, its console and attestation. The POV's VMs are
 * the vm-manager VMs pov.get names (its vmId is the vm-manager's VM id) and any VM named under the
 * POV's environment id (`povdesk-<tag>-<vm>`, main/services/lab-platforms/local.ts), so a VM
 * still being created shows before the POV's VMs are read.
 */
export function LocalPovVms({ envId, povVms }: { envId: string | null; povVms: PovVmView[] }) {
  const { vms, listError, connection, refresh, follow } = useVms();
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => follow(), [follow]);
  useEffect(() => {
    void refresh();
  }, [refresh]);
  // which manager these VMs are on (Exec & ports tunnels differently for a remote one)
  useEffect(() => {
    if (!connection) void useVms.getState().loadConnection();
  }, [connection]);

  const mine = useMemo(() => {
    const ids = new Set(povVms.filter((v) => !v.goneAt).map((v) => v.vmId));
    return (vms ?? []).filter((v) => ids.has(v.id) || (envId !== null && v.name.startsWith(`${envId}-`)));
  }, [vms, povVms, envId]);
  const sel = mine.find((v) => v.id === selected) ?? null;

  return (
    <div className="local-vms pov-local-vms" aria-label="Local VMs of this POV">
      <ErrorAlert error={listError} />
      <ErrorAlert error={error} />
      {vms && mine.length === 0 && (
        <p className="muted">The vm-manager has none of this POV's VMs (yet). They are listed here once created.</p>
      )}
      {mine.length > 0 && (
        <VmList
          vms={mine}
          selected={selected}
          onSelect={setSelected}
          onChanged={() => void refresh()}
          onConsole={(vm, interactive) => {
            setError(null);
            openVmConsole(vm, interactive, setError);
          }}
          onSsh={(vm) => {
            setError(null);
            openVmSsh(vm, setError);
          }}
        />
      )}
      {sel && <VmDetailPanel vm={sel} remote={connection?.mode === 'remote'} onClose={() => setSelected(null)} />}
    </div>
  );
}
