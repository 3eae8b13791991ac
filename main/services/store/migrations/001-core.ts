import type { Migration } from '../migration';

const migration: Migration = {
  version: 1,
  name: 'core: settings, jobs, job log',
  up(db) {
    db.exec(`
      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        subject TEXT,
        routine INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL CHECK (state IN ('queued','running','succeeded','failed','cancelled','interrupted')),
        step TEXT NOT NULL DEFAULT '',
        fraction REAL,
        message TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        error TEXT,
        result TEXT
      );
      CREATE INDEX jobs_created ON jobs (created_at DESC);
      CREATE INDEX jobs_subject ON jobs (subject);
      CREATE TABLE job_log (
        job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        level TEXT NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (job_id, seq)
      );
    `);
  },
};
export default migration;
