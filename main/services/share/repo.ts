import type { ShareView } from '../../../shared/contract/share';
import type { Db } from '../store/db';

/** One row of pov_shares. The password is never here: it is in the keychain. */
export interface ShareRow {
  pov_id: string;
  share_id: string;
  name: string;
  url: string | null;
  access: string | null;
  vm_ids: string;
  expires_at: string | null;
  runtime_limit_minutes: number | null;
  runtime_left_seconds: number | null;
  managed: number;
  gone_at: string | null;
  created_at: string;
  updated_at: string;
}

export function listShares(db: Db, povId: string): ShareRow[] {
  return db
    .prepare('SELECT * FROM pov_shares WHERE pov_id = ? ORDER BY gone_at IS NOT NULL, created_at, share_id')
    .all(povId) as ShareRow[];
}

export function getShare(db: Db, povId: string, shareId: string): ShareRow | null {
  return (db.prepare('SELECT * FROM pov_shares WHERE pov_id = ? AND share_id = ?').get(povId, shareId) as ShareRow | undefined) ?? null;
}

export function upsertShare(db: Db, r: ShareRow): void {
  db.prepare(
    `INSERT INTO pov_shares (pov_id, share_id, name, url, access, vm_ids, expires_at, runtime_limit_minutes,
       runtime_left_seconds, managed, gone_at, created_at, updated_at)
     VALUES (@pov_id, @share_id, @name, @url, @access, @vm_ids, @expires_at, @runtime_limit_minutes,
       @runtime_left_seconds, @managed, @gone_at, @created_at, @updated_at)
     ON CONFLICT (pov_id, share_id) DO UPDATE SET name = excluded.name, url = excluded.url, access = excluded.access,
       vm_ids = excluded.vm_ids, expires_at = excluded.expires_at, runtime_limit_minutes = excluded.runtime_limit_minutes,
       runtime_left_seconds = excluded.runtime_left_seconds, gone_at = excluded.gone_at, updated_at = excluded.updated_at`,
  ).run(r);
}

export function markShareGone(db: Db, povId: string, shareId: string, at: string): void {
  db.prepare('UPDATE pov_shares SET gone_at = ?, updated_at = ? WHERE pov_id = ? AND share_id = ? AND gone_at IS NULL').run(
    at,
    at,
    povId,
    shareId,
  );
}

export function toShareView(r: ShareRow, passwordStored: boolean): ShareView {
  return {
    shareId: r.share_id,
    name: r.name,
    url: r.url,
    access: r.access,
    vmIds: JSON.parse(r.vm_ids) as string[],
    expiresAt: r.expires_at,
    runtimeLimitMinutes: r.runtime_limit_minutes,
    runtimeLeftSeconds: r.runtime_left_seconds,
    managed: r.managed === 1,
    passwordStored,
    goneAt: r.gone_at,
    createdAt: r.created_at,
  };
}
