import type { Migration } from '../migration';

/**
 * What a POV's VM reports about its network, from its interfaces (issue 38): `network_type`
 * ('automatic' | 'manual' | null when not reported; the control node's install refuses a manual
 * one), `network_id` and `network_name` (the Resource Broker host must share the control node's
 * network), and `published_json`, the published services Skytap NATs to a public host:port
 * (`[{internalPort, externalHost, externalPort}]`, shown on the VMs tab, never used for wiring).
 */
const migration: Migration = {
  version: 12,
  name: 'pov_vms: network and published services',
  up(db) {
    db.exec('ALTER TABLE pov_vms ADD COLUMN network_type TEXT');
    db.exec('ALTER TABLE pov_vms ADD COLUMN network_id TEXT');
    db.exec('ALTER TABLE pov_vms ADD COLUMN network_name TEXT');
    db.exec("ALTER TABLE pov_vms ADD COLUMN published_json TEXT NOT NULL DEFAULT '[]'");
  },
};
export default migration;
