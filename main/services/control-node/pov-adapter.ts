import { getPov, listVms, updatePov } from '../pov/repo';
import type { Db } from '../store/db';
import type { ControlNodePatch, ControlNodePov, PovLookup } from './install';

/**
 * PovLookup over the POV tables (migration 2): the VMs not marked gone, each with the user's OS
 * override before Skytap's answer; the control_node_* columns as the summary the list shows.
 */
export function dbPovLookup(db: Db, now: () => Date = () => new Date()): PovLookup {
  return {
    getPov(id: string): ControlNodePov | null {
      const r = getPov(db, id);
      if (!r) return null;
      return {
        id: r.id,
        envId: r.env_id,
        runstate: r.runstate,
        controlNodeName: r.control_node_name,
        enrolledVmId: r.control_node_status === 'enrolled' ? r.control_node_vm_id : null,
        vms: listVms(db, id)
          .filter((v) => v.gone_at === null)
          .map((v) => ({ id: v.vm_id, name: v.name, os: v.os_override ?? v.os_platform, ip: v.ip })),
        // Migration 5's columns (undefined before it runs): excluded from step 3 of resolution.
        entitleHostName: r.entitle_host ?? null,
        brokerHostName: r.broker_host ?? null,
      };
    },
    setControlNode(id: string, patch: ControlNodePatch): void {
      const cols: Record<string, string | null> = {};
      if (patch.name !== undefined) cols.control_node_name = patch.name;
      if (patch.vmId !== undefined) cols.control_node_vm_id = patch.vmId;
      if (patch.status !== undefined) cols.control_node_status = patch.status;
      if (patch.reason !== undefined) cols.control_node_reason = patch.reason;
      if (patch.mode !== undefined) cols.control_node_mode = patch.mode;
      updatePov(db, id, cols, now().toISOString());
    },
  };
}
