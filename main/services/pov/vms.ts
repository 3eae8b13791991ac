import type { Db } from '../store/db';
import type { LabVm } from '../lab-platforms/platform';

export interface VmApplyResult {
  seen: number;
  added: number;
  markedGone: number;
  /** True when the read returned no VMs and nothing was changed. */
  emptyRead: boolean;
}

/**
 * Writes one VM read (any lab platform's VMs) into pov_vms.
 * - An EMPTY read changes nothing: a transient error that returns zero VMs must never prune rows
 *   (and later the columns other work hangs on them).
 * - A VM absent from a non-empty read gets gone_at; it is never deleted.
 * - os_override is never touched; os_platform follows the platform's OS (Skytap's hardware.guestOS) each time.
 */
export function applyLabVms(db: Db, povId: string, vms: readonly LabVm[], at: string): VmApplyResult {
  if (vms.length === 0) return { seen: 0, added: 0, markedGone: 0, emptyRead: true };
  const existing = new Set(
    (db.prepare('SELECT vm_id FROM pov_vms WHERE pov_id = ?').all(povId) as { vm_id: string }[]).map((r) => r.vm_id),
  );
  const upsert = db.prepare(
    `INSERT INTO pov_vms (pov_id, vm_id, name, os_platform, guest_os, ip, hostname, runstate, network_type, network_id, ` +
      `network_name, published_json, gone_at, first_seen_at, updated_at)
     VALUES (@pov_id, @vm_id, @name, @os_platform, @guest_os, @ip, @hostname, @runstate, @network_type, @network_id, ` +
      `@network_name, @published_json, NULL, @at, @at)
     ON CONFLICT (pov_id, vm_id) DO UPDATE SET
       name = excluded.name, os_platform = excluded.os_platform, guest_os = excluded.guest_os,
       ip = excluded.ip, hostname = excluded.hostname, runstate = excluded.runstate,
       network_type = excluded.network_type, network_id = excluded.network_id, network_name = excluded.network_name,
       published_json = excluded.published_json,
       gone_at = NULL, updated_at = excluded.updated_at`,
  );
  const markGone = db.prepare('UPDATE pov_vms SET gone_at = ?, updated_at = ? WHERE pov_id = ? AND vm_id = ? AND gone_at IS NULL');
  let added = 0;
  let markedGone = 0;
  db.transaction(() => {
    const seen = new Set<string>();
    for (const vm of vms) {
      seen.add(vm.id);
      if (!existing.has(vm.id)) added++;
      upsert.run({
        pov_id: povId,
        vm_id: vm.id,
        name: vm.name,
        os_platform: vm.os,
        guest_os: vm.guestOs,
        ip: vm.ip,
        hostname: vm.hostname,
        runstate: vm.runstate,
        network_type: vm.network?.type ?? null,
        network_id: vm.network?.id ?? null,
        network_name: vm.network?.name ?? null,
        published_json: JSON.stringify(vm.published ?? []),
        at,
      });
    }
    for (const id of existing) {
      if (!seen.has(id)) markedGone += markGone.run(at, at, povId, id).changes;
    }
  })();
  return { seen: vms.length, added, markedGone, emptyRead: false };
}

export function markAllVmsGone(db: Db, povId: string, at: string): void {
  db.prepare('UPDATE pov_vms SET gone_at = ?, updated_at = ? WHERE pov_id = ? AND gone_at IS NULL').run(at, at, povId);
}
