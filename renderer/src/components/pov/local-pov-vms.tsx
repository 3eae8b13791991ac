import { useEffect, useMemo, useState } from 'react';
import type { PovVmView } from '../../../../shared/contract/pov';
import { useVms } from '../../state/vms';
import { ErrorAlert } from '../error-alert';
import { openVmConsole, openVmSsh, VmDetailPanel } from '../vm/vm-detail';
import { VmList } from '../vm/vm-list';
import '../../pages/local-vms-page.css';

/**
 * A local POV's VMs as the vm-manager has them: the Local VMs page's list (state, durations,
 * attestation, actions) and, for the one picked, its console and attestation. The POV's VMs are
 * the vm-manager VMs its rows name (pov.get's vmId is the vm-manager's VM id; a VM whose id is
 * not known yet is matched by its name, which carries the POV's tag).
 */
export function LocalPovVms({ povVms }: { povVms: PovVmView[] }) {
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
    const names = new Set(povVms.filter((v) => !v.goneAt).map((v) => v.name));
    return (vms ?? []).filter((v) => ids.has(v.id) || names.has(v.name));
  }, [vms, povVms]);
  const sel = mine.find((v) => v.id === selected) ?? null;

  return (
    <div className="local-vms pov-local-vms" aria-label="Local VMs of this POV">
      <ErrorAlert error={listError} />
      <ErrorAlert error={error} />
      {vms && mine.length === 0 && <p className="muted">The vm-manager has none of this POV's VMs (yet). They are listed here once created.</p>}
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
          onSsh={openVmSsh}
        />
      )}
      {sel && <VmDetailPanel vm={sel} remote={connection?.mode === 'remote'} onClose={() => setSelected(null)} />}
    </div>
  );
}
