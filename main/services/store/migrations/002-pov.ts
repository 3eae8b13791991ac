import type { Migration } from '../migration';

/**
 * POVs (one Skytap environment each) and their VMs.
 *
 * - `env_id` is nullable only for the moment between inserting the row and the create call
 *   returning; the lifecycle commits it immediately after that call. `skytap_name` carries a
 *   per-row tag so an interrupted create can find (adopt) its environment instead of orphaning it;
 *   `create_sent_at` (committed before the POST) says whether such a lookup is needed at all.
 * - `pov_vms.os_platform` is what Skytap says (linux|windows|unknown); `os_override` is the user's
 *   choice, kept in its own column so no refresh ever overwrites it.
 * - A VM absent from a non-empty read gets `gone_at`; rows are never deleted by a refresh.
 * - `control_node_*` belong to the control-node install; its failures land in
 *   `control_node_reason`, never in `error_message` (which means "this environment is broken").
 */
const migration: Migration = {
  version: 2,
  name: 'pov: povs and pov_vms',
  up(db) {
    db.exec(`
      CREATE TABLE povs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        platform TEXT NOT NULL DEFAULT 'skytap',
        template_id TEXT NOT NULL,
        template_name TEXT NOT NULL DEFAULT '',
        skytap_name TEXT NOT NULL,
        env_id TEXT,
        create_sent_at TEXT,
        state TEXT NOT NULL CHECK (state IN ('provisioning','active','failed','destroying','destroyed')),
        runstate TEXT,
        rate_limited INTEGER NOT NULL DEFAULT 0,
        error_message TEXT,
        last_confirmed_at TEXT,
        env_gone_at TEXT,
        control_node_name TEXT,
        control_node_vm_id TEXT,
        control_node_status TEXT,
        control_node_reason TEXT,
        control_node_mode TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX povs_env ON povs (env_id) WHERE env_id IS NOT NULL AND state <> 'destroyed';
      CREATE INDEX povs_state ON povs (state);
      CREATE TABLE pov_vms (
        pov_id TEXT NOT NULL REFERENCES povs(id) ON DELETE CASCADE,
        vm_id TEXT NOT NULL,
        name TEXT NOT NULL,
        os_platform TEXT NOT NULL DEFAULT 'unknown' CHECK (os_platform IN ('linux','windows','unknown')),
        os_override TEXT CHECK (os_override IS NULL OR os_override IN ('linux','windows','unknown')),
        guest_os TEXT,
        ip TEXT,
        hostname TEXT,
        runstate TEXT,
        gone_at TEXT,
        first_seen_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (pov_id, vm_id)
      );
    `);
  },
};
export default migration;
