import type { Migration } from '../migration';

/**
 * Control node: one row per agent minted for a POV's control node, so a later install revokes the
 * previous agent, teardown revokes the last one, and the enrolment wait survives a restart's
 * inspection. The POV row's control_node_* columns (migration 2) stay the summary the list shows.
 * No foreign key to povs: an agent row must outlive a POV row long enough to be revoked.
 */
const migration: Migration = {
  version: 3,
  name: 'control node: agents minted per POV',
  up(db) {
    db.exec(`
      CREATE TABLE control_node_agents (
        agent_id TEXT PRIMARY KEY,
        pov_id TEXT NOT NULL,
        env_id TEXT NOT NULL,
        vm_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('minted','injected','enrolled','expired','revoked','failed')),
        attestation TEXT CHECK (attestation IN ('spire','ed25519')),
        tier INTEGER CHECK (tier IN (1,2,3)),
        chars INTEGER,
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL,
        injected_at TEXT,
        enrolled_at TEXT,
        cleared_at TEXT,
        revoked_at TEXT,
        reason TEXT
      );
      CREATE INDEX control_node_agents_pov ON control_node_agents (pov_id, created_at DESC);
    `);
  },
};
export default migration;
