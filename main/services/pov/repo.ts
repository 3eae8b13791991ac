import type { Db } from '../store/db';
import type { OsValue, PovState, PovView, PovVmView } from '../../../shared/contract/pov';
import { povActionsFor } from '../../../shared/contract/pov';
import type { PublishedPort } from '../lab-platforms/platform';

/** One row of `povs` as stored. */
export interface PovRow {
  id: string;
  name: string;
  platform: string;
  template_id: string;
  template_name: string;
  env_name: string;
  env_id: string | null;
  create_sent_at: string | null;
  state: PovState;
  runstate: string | null;
  rate_limited: number;
  error_message: string | null;
  last_confirmed_at: string | null;
  env_gone_at: string | null;
  control_node_name: string | null;
  control_node_vm_id: string | null;
  control_node_status: string | null;
  control_node_reason: string | null;
  control_node_mode: string | null;
  /** Migration 5; absent (undefined) on a database it has not reached yet. */
  entitle_host?: string | null;
  broker_host?: string | null;
  /** Migration 6 (share links and auto-delete); absent on a database it has not reached yet. */
  auto_delete_at?: string | null;
  schedule_id?: string | null;
  auto_delete_status?: string | null;
  auto_delete_reason?: string | null;
  suspend_on_idle?: number | null;
  /** Migration 8: the customer's IANA time zone; absent on a database it has not reached yet. */
  customer_tz?: string | null;
  /** Migration 11 (local POVs): Internet access (0/1) and when "Save clean state" last ran. */
  internet_access?: number;
  clean_snapshot_at?: string | null;
  /** Joined from pov_vms: the name of control_node_vm_id (not a column of povs). */
  control_node_vm_name?: string | null;
  created_at: string;
  updated_at: string;
}

export interface PovVmRow {
  pov_id: string;
  vm_id: string;
  name: string;
  os_platform: OsValue;
  os_override: OsValue | null;
  guest_os: string | null;
  ip: string | null;
  hostname: string | null;
  runstate: string | null;
  /** Migration 12's columns. */
  network_type?: 'automatic' | 'manual' | null;
  network_id?: string | null;
  network_name?: string | null;
  published_json?: string;
  gone_at: string | null;
  first_seen_at: string;
  updated_at: string;
}

// The control node's VM name comes with the row (one join, so a 2,000-row list is still one query).
const SELECT_POV = `SELECT p.*, v.name AS control_node_vm_name FROM povs p
  LEFT JOIN pov_vms v ON v.pov_id = p.id AND v.vm_id = p.control_node_vm_id`;

export function getPov(db: Db, id: string): PovRow | null {
  return (db.prepare(`${SELECT_POV} WHERE p.id = ?`).get(id) as PovRow | undefined) ?? null;
}

export function listPovs(db: Db, includeDestroyed = false): PovRow[] {
  const sql = includeDestroyed
    ? `${SELECT_POV} ORDER BY p.created_at DESC, p.id`
    : `${SELECT_POV} WHERE p.state <> 'destroyed' ORDER BY p.created_at DESC, p.id`;
  return db.prepare(sql).all() as PovRow[];
}

export function insertPov(
  db: Db,
  row: { id: string; name: string; templateId: string; templateName: string; envName: string; at: string; platform?: string },
): void {
  db.prepare(
    `INSERT INTO povs (id, name, platform, template_id, template_name, env_name, state, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 'provisioning', ?, ?)`,
  ).run(row.id, row.name, row.platform ?? 'skytap', row.templateId, row.templateName, row.envName, row.at, row.at);
}

type Patch = Partial<Omit<PovRow, 'id' | 'created_at' | 'control_node_vm_name'>>;

/** Updates the named columns (and updated_at) in one statement; each call is its own commit. */
export function updatePov(db: Db, id: string, patch: Patch, at: string): void {
  const cols = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
  const sets = [...cols.map((c) => `${c} = @${c}`), 'updated_at = @updated_at'];
  db.prepare(`UPDATE povs SET ${sets.join(', ')} WHERE id = @id`).run({ ...patch, updated_at: at, id });
}

export function listVms(db: Db, povId: string): PovVmRow[] {
  return db.prepare('SELECT * FROM pov_vms WHERE pov_id = ? ORDER BY gone_at IS NOT NULL, name, vm_id').all(povId) as PovVmRow[];
}

export function getVm(db: Db, povId: string, vmId: string): PovVmRow | null {
  return (db.prepare('SELECT * FROM pov_vms WHERE pov_id = ? AND vm_id = ?').get(povId, vmId) as PovVmRow | undefined) ?? null;
}

export function toPovView(r: PovRow, activeJobId: string | null, installJobId: string | null = null): PovView {
  const busy = activeJobId !== null;
  return {
    id: r.id,
    name: r.name,
    platform: r.platform,
    templateId: r.template_id,
    templateName: r.template_name,
    envId: r.env_id,
    state: r.state,
    runstate: r.runstate,
    rateLimited: r.rate_limited === 1,
    errorMessage: r.error_message,
    lastConfirmedAt: r.last_confirmed_at,
    envGoneAt: r.env_gone_at,
    controlNode: {
      name: r.control_node_name,
      vmId: r.control_node_vm_id,
      status: r.control_node_status,
      reason: r.control_node_reason,
      mode: r.control_node_mode,
      vm: r.control_node_vm_name ?? null,
      entitleHost: r.entitle_host ?? null,
      brokerHost: r.broker_host ?? null,
      jobId: installJobId,
    },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    activeJobId,
    ...(r.auto_delete_at !== undefined
      ? {
          autoDelete: {
            at: r.auto_delete_at ?? null,
            status: (r.auto_delete_status ?? null) as 'armed' | 'not_armed' | 'pending' | null,
            reason: r.auto_delete_reason ?? null,
            scheduleId: r.schedule_id ?? null,
            nextWarning: null,
            lastWarning: null,
          },
        }
      : {}),
    ...(r.customer_tz !== undefined ? { customerTz: r.customer_tz ?? null } : {}),
    ...(r.internet_access !== undefined ? { internetAccess: r.internet_access === 1, cleanSnapshotAt: r.clean_snapshot_at ?? null } : {}),
    actions: povActionsFor({ state: r.state, runstate: r.runstate, envId: r.env_id, busy, installing: installJobId !== null }),
  };
}

export function toVmView(v: PovVmRow): PovVmView {
  return {
    vmId: v.vm_id,
    name: v.name,
    osPlatform: v.os_platform,
    osOverride: v.os_override,
    os: v.os_override ?? v.os_platform,
    guestOs: v.guest_os,
    ip: v.ip,
    hostname: v.hostname,
    runstate: v.runstate,
    goneAt: v.gone_at,
    network: v.network_type || v.network_name ? { name: v.network_name ?? null, type: v.network_type ?? null } : null,
    published: publishedOf(v),
  };
}

/** The published services stored with a VM row ([] when none, or when the column does not parse). */
export function publishedOf(v: Pick<PovVmRow, 'published_json'>): PublishedPort[] {
  try {
    const parsed: unknown = JSON.parse(v.published_json ?? '[]');
    return Array.isArray(parsed) ? (parsed as PublishedPort[]) : [];
  } catch {
    return [];
  }
}
