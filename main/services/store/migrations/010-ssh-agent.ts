import type { Migration } from '../migration';

/**
 * SSH profiles may sign in with the user's SSH agent (`auth_kind` 'agent': nothing in the
 * keychain). SQLite cannot change a CHECK constraint in place, so the table is rebuilt with the
 * same columns and every row copied.
 */
const migration: Migration = {
  version: 10,
  name: 'ssh profiles: the SSH agent as a way to sign in',
  up(db) {
    db.exec(
      `
      CREATE TABLE ssh_profiles_new (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
        username TEXT NOT NULL,
        auth_kind TEXT NOT NULL CHECK (auth_kind IN ('key', 'password', 'agent')),
        public_key TEXT,
        jump_json TEXT NOT NULL DEFAULT '[]',
        keepalive_sec INTEGER NOT NULL DEFAULT 15,
        auto_reconnect INTEGER NOT NULL DEFAULT 1,
        agent_forward INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      INSERT INTO ssh_profiles_new (id, name, host, port, username, auth_kind, public_key, jump_json, keepalive_sec, ` +
        `auto_reconnect, agent_forward, created_at, updated_at)
        SELECT id, name, host, port, username, auth_kind, public_key, jump_json, keepalive_sec, auto_reconnect, ` +
        `agent_forward, created_at, updated_at FROM ssh_profiles;
      DROP TABLE ssh_profiles;
      ALTER TABLE ssh_profiles_new RENAME TO ssh_profiles;
    `,
    );
  },
};
export default migration;
