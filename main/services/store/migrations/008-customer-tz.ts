import type { Migration } from '../migration';

/**
 * The customer's time zone per POV (issue 19): an IANA name such as "America/New_York", or NULL
 * when not given. The renderer shows every time of the POV (auto-delete, the warning ladder, share
 * expiry) in the SE's zone with the customer's beside it, and the share handout defaults to it.
 * The core checks the name against Intl before it is stored (shared/contract/pov.ts).
 */
const migration: Migration = {
  version: 8,
  name: 'povs.customer_tz',
  up(db) {
    db.exec('ALTER TABLE povs ADD COLUMN customer_tz TEXT');
  },
};
export default migration;
