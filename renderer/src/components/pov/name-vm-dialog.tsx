import { useEffect, useRef, useState } from 'react';
import type { PovView, PovVmView } from '../../../../shared/contract/pov';
import { api, errorText } from '../../api';
import { ModalDialog } from '../modal-dialog';
import { ErrorAlert } from '../error-alert';

/**
 * name VM: the control node's VM name for an existing POV (exact, case-insensitive; blank goes back
 * to resolving from the template), plus the Entitle agent host and Resource Broker host, which
 * resolution leaves out. Saving re-resolves and says which VM it picks or why none; the POV's row
 * follows by the `pov.updated` event the save publishes.
 */
export function NameVmDialog({ pov, onClose }: { pov: PovView; onClose(): void }) {
  const cn = pov.controlNode;
  const [vms, setVms] = useState<PovVmView[]>([]);
  const [name, setName] = useState(cn.name ?? '');
  const [entitle, setEntitle] = useState(cn.entitleHost ?? '');
  const [broker, setBroker] = useState(cn.brokerHost ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // what the server holds now (moves on with each save, so a second save compares against it)
  const saved = useRef({ name: cn.name ?? '', entitle: cn.entitleHost ?? '', broker: cn.brokerHost ?? '' });
  const [result, setResult] = useState<{ vm: string | null; reason: string | null } | null>(null);

  useEffect(() => {
    let live = true;
    api
      .call('pov.get', { id: pov.id })
      .then((d) => live && setVms(d.vms.filter((v) => !v.goneAt)))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [pov.id]);

  async function save() {
    setBusy(true);
    setError(null);
    try {
      let summary = null;
      const roles: { entitleHost?: string; brokerHost?: string } = {};
      const was = saved.current;
      if (entitle.trim() !== was.entitle) roles.entitleHost = entitle.trim();
      if (broker.trim() !== was.broker) roles.brokerHost = broker.trim();
      if (Object.keys(roles).length) {
        summary = (await api.call('pov.setRoleHosts', { id: pov.id, ...roles })).controlNode;
        saved.current = { ...saved.current, entitle: summary.entitleHost ?? '', broker: summary.brokerHost ?? '' };
      }
      if (name.trim() !== saved.current.name || !summary) {
        summary = (await api.call('pov.setControlNodeName', { id: pov.id, name: name.trim() })).controlNode;
        saved.current = { ...saved.current, name: summary.name ?? '' };
      }
      setResult({ vm: summary.resolvedVm, reason: summary.resolvedVm ? null : summary.reason });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  const listId = `pov-vms-${pov.id}`;
  return (
    <ModalDialog onCancel={onClose} className="pov-dialog narrow" aria-label={`Control node VM for ${pov.name}`}>
      <h3>Control node VM — {pov.name}</h3>
      <p className="small muted">
        The name must match a VM exactly (case is ignored); nothing is guessed. Leave it blank to use the only Linux VM, or the one called
        broker. The Entitle agent host and the Resource Broker host are never picked.
      </p>
      <datalist id={listId}>
        {vms.map((v) => (
          <option key={v.vmId} value={v.name}>
            {v.os}
          </option>
        ))}
      </datalist>
      <label className="form">
        <span>Control node VM name</span>
        <input
          aria-label="Control node VM name"
          list={listId}
          value={name}
          maxLength={255}
          onChange={(e) => setName(e.target.value)}
          autoFocus
        />
      </label>
      <label className="form">
        <span>Entitle agent host</span>
        <input aria-label="Entitle agent host" list={listId} value={entitle} maxLength={255} onChange={(e) => setEntitle(e.target.value)} />
      </label>
      <label className="form">
        <span>Resource Broker host</span>
        <input aria-label="Resource Broker host" list={listId} value={broker} maxLength={255} onChange={(e) => setBroker(e.target.value)} />
      </label>
      <ErrorAlert error={error} />
      {result && (
        <p role="status" className={result.vm ? 'ok' : 'error'}>
          {result.vm
            ? `Control node: ${result.vm}. Press Install control node to put the agent there.`
            : `No control node: ${result.reason ?? 'refused'}`}
        </p>
      )}
      <div className="row" style={{ justifyContent: 'flex-end' }}>
        <button onClick={onClose}>{result ? 'Close' : 'Cancel'}</button>
        <button className="primary" disabled={busy} onClick={() => void save()}>
          {busy ? 'Saving…' : 'Save'}
        </button>
      </div>
    </ModalDialog>
  );
}
