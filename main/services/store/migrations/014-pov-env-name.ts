import type { Migration } from '../migration';

/**
 * `povs.skytap_name` → `env_name`: the name the lab platform's environment gets (a Skytap
 * environment or a local POV's VMs), which local POVs carry too. SQLite renames the column in
 * place (3.25+), keeping every row's value.
 */
const migration: Migration = {
  version: 14,
  name: 'povs: skytap_name → env_name',
  up(db) {
    db.exec('ALTER TABLE povs RENAME COLUMN skytap_name TO env_name');
  },
};
export default migration;
