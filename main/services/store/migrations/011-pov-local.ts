import type { Migration } from '../migration';

/**
 * A local POV's own switches (issue 34): `internet_access` (0/1, off by default: the POV's VMs
 * reach only each other) and `clean_snapshot_at`, when "Save clean state" last saved every VM's
 * disk, vTPM state and firmware variables (null: never). Skytap POVs leave both at their defaults.
 */
const migration: Migration = {
  version: 11,
  name: 'povs.internet_access, povs.clean_snapshot_at',
  up(db) {
    db.exec('ALTER TABLE povs ADD COLUMN internet_access INTEGER NOT NULL DEFAULT 0');
    db.exec('ALTER TABLE povs ADD COLUMN clean_snapshot_at TEXT');
  },
};
export default migration;
