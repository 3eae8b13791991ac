import type { Migration } from '../migration';

/**
 * Share links, auto-delete and notifications.
 * - povs: the auto-delete time, the Skytap schedule that enforces it, whether the last sweep
 *   found it armed, and the environment's suspend_on_idle as last read (added columns only).
 * - pov_shares: sharing portals as last read. NEVER the password: it lives in the keychain,
 *   keyed by POV and portal (share/service.ts).
 * - ladder_steps: each warning step fired (or skipped as superseded) once per POV and deletion
 *   time; the key makes "exactly once" hold across restarts.
 * - notifications: the in-app list; `dedupe_key` folds identical events into one row with a count.
 */
const migration: Migration = {
  version: 6,
  name: 'share links, auto-delete schedule, warning ladder, notifications',
  up(db) {
    db.exec(`
      ALTER TABLE povs ADD COLUMN auto_delete_at TEXT;
      ALTER TABLE povs ADD COLUMN schedule_id TEXT;
      ALTER TABLE povs ADD COLUMN auto_delete_status TEXT;
      ALTER TABLE povs ADD COLUMN auto_delete_reason TEXT;
      ALTER TABLE povs ADD COLUMN suspend_on_idle INTEGER;

      CREATE TABLE pov_shares (
        pov_id TEXT NOT NULL REFERENCES povs(id) ON DELETE CASCADE,
        share_id TEXT NOT NULL,
        name TEXT NOT NULL,
        url TEXT,
        access TEXT,
        vm_ids TEXT NOT NULL DEFAULT '[]',
        expires_at TEXT,
        runtime_limit_minutes INTEGER,
        runtime_left_seconds INTEGER,
        managed INTEGER NOT NULL,
        gone_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (pov_id, share_id)
      );

      CREATE TABLE ladder_steps (
        pov_id TEXT NOT NULL,
        delete_at TEXT NOT NULL,
        step TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('fired', 'skipped')),
        at TEXT NOT NULL,
        PRIMARY KEY (pov_id, delete_at, step)
      );

      CREATE TABLE notifications (
        id TEXT PRIMARY KEY,
        dedupe_key TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        pov_id TEXT,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        urgent INTEGER NOT NULL DEFAULT 0,
        count INTEGER NOT NULL DEFAULT 1,
        held INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        read_at TEXT,
        withdrawn_at TEXT
      );
      CREATE INDEX notifications_recent ON notifications (updated_at);
    `);
  },
};
export default migration;
