import type { Migration } from '../migration';

/**
 * The bake's jobs under the `bake.*` methods that start them (issue 39): rows written before say
 * `templates.bake` / `templates.export`; they are renamed so the history reads like new rows and
 * nothing has to read both spellings. Frozen: the names are spelled here, not taken from JOB_KIND.
 */
export const BAKE_JOB_RENAMES: Readonly<Record<string, string>> = {
  'templates.bake': 'bake.start',
  'templates.export': 'bake.export',
};

const migration: Migration = {
  version: 13,
  name: 'jobs: the bake kinds under bake.*',
  up(db) {
    const rename = db.prepare('UPDATE jobs SET kind = ? WHERE kind = ?');
    for (const [old, kind] of Object.entries(BAKE_JOB_RENAMES)) rename.run(kind, old);
  },
};
export default migration;
