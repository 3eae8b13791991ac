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
        platform: r.platform,
        envId: r.env_id,
        runstate: r.runstate,
        controlNodeName: r.control_node_name,
        enrolledVmId: r.control_node_status === 'enrolled' ? r.control_node_vm_id : null,
        vms: listVms(db, id)
          .filter((v) => v.gone_at === null)
          .map((v) => ({ id: v.vm_id, name: v.name, os: v.os_override ?? v.os_platform, ip: v.ip, networkType: v.network_type ?? null })),
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

/** A POV's name for a job title (its id when the row is gone). */
export function povName(db: Db, povId: string): string {
  return (db.prepare('SELECT name FROM povs WHERE id = ?').get(povId) as { name: string } | undefined)?.name ?? povId;
}

/** Whether migration 5's role-host columns exist (a database not yet migrated lacks them). */
export function hasRoleHostColumns(db: Db): boolean {
  return (
    (db.prepare("SELECT COUNT(*) AS n FROM pragma_table_info('povs') WHERE name IN ('entitle_host','broker_host')").get() as { n: number })
      .n === 2
  );
}

export interface ControlNodeRow {
  name: string | null;
  vmId: string | null;
  status: string | null;
  reason: string | null;
  mode: string | null;
  entitleHost?: string | null;
  brokerHost?: string | null;
}

/** The control_node_* columns of a POV, and its role hosts once migration 5 has run. */
export function controlNodeRow(db: Db, povId: string): ControlNodeRow | undefined {
  const roles = hasRoleHostColumns(db) ? ', entitle_host AS entitleHost, broker_host AS brokerHost' : '';
  return db
    .prepare(
      `SELECT control_node_name AS name, control_node_vm_id AS vmId, control_node_status AS status, control_node_reason AS ` +
        `reason, control_node_mode AS mode${roles} FROM povs WHERE id = ?`,
    )
    .get(povId) as ControlNodeRow | undefined;
}

/** Sets the Entitle and broker host names ('' or null clears one; undefined leaves it). */
export function setRoleHosts(
  db: Db,
  povId: string,
  hosts: { entitleHost?: string | null | undefined; brokerHost?: string | null | undefined },
  now: () => Date = () => new Date(),
): void {
  const cols: Record<string, string | null> = {};
  if (hosts.entitleHost !== undefined) cols.entitle_host = hosts.entitleHost || null;
  if (hosts.brokerHost !== undefined) cols.broker_host = hosts.brokerHost || null;
  if (Object.keys(cols).length) updatePov(db, povId, cols, now().toISOString());
}
