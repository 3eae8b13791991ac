import type { Migration } from '../migration';

/**
 * Control node per POV: the names of the Entitle agent host and the Resource Broker host. Both are
 * deliberately different machines from the control node, so resolution step 3 ("the only Linux
 * VM") leaves them out. Blank means "not named". Added columns only: databases already exist.
 */
const migration: Migration = {
  version: 5,
  name: 'control node: Entitle agent host and Resource Broker host per POV',
  up(db) {
    db.exec(`
      ALTER TABLE povs ADD COLUMN entitle_host TEXT;
      ALTER TABLE povs ADD COLUMN broker_host TEXT;
    `);
  },
};
export default migration;
