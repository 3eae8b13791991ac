import { LEGACY_JOB_KINDS } from '../../../../shared/contract/job-kinds';
import type { Migration } from '../migration';

/**
 * Job kinds in one spelling (shared/contract/job-kinds.ts): rows written before it say `pov_create`
 * or `control-node.install`; they are renamed so the history reads like new rows.
 */
const migration: Migration = {
  version: 9,
  name: 'jobs: kinds in the one spelling of the contract',
  up(db) {
    const rename = db.prepare('UPDATE jobs SET kind = ? WHERE kind = ?');
    for (const [old, kind] of Object.entries(LEGACY_JOB_KINDS)) rename.run(kind, old);
  },
};
export default migration;
