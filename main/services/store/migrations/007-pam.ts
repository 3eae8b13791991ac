import type { Migration } from '../migration';

/**
 * PAM wiring per POV (docs/pam.md). `pam_tenants` holds the non-secret half of each tenant (the
 * secrets are in the keychain under pam:<povId>:*); `pam_artifacts` one row per object the wiring
 * made or found in a tenant, so a re-run and the unwire know what exists; `pam_runs` the last
 * wire/unwire of each POV (what a restart resumes).
 */
const migration: Migration = {
  version: 7,
  name: 'pam: tenants, artifacts and runs per POV',
  up(db) {
    db.exec(`
      CREATE TABLE pam_tenants (
        pov_id TEXT PRIMARY KEY REFERENCES povs(id) ON DELETE CASCADE,
        pra_site TEXT,
        pra_client_id TEXT,
        ps_url TEXT,
        ps_run_as TEXT,
        ps_client_id TEXT,
        entitle_url TEXT,
        fa_linux TEXT,
        fa_windows TEXT,
        managed_linux TEXT NOT NULL DEFAULT '[]',
        managed_windows TEXT NOT NULL DEFAULT '[]',
        updated_at TEXT NOT NULL
      );
      CREATE TABLE pam_artifacts (
        pov_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL DEFAULT '',
        remote_id TEXT,
        state TEXT NOT NULL,
        detail TEXT,
        error TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (pov_id, kind, key)
      );
      CREATE TABLE pam_runs (
        pov_id TEXT PRIMARY KEY,
        op TEXT NOT NULL,
        state TEXT NOT NULL,
        job_id TEXT,
        at TEXT NOT NULL
      );
    `);
  },
};
export default migration;
