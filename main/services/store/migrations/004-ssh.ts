import type { Migration } from '../migration';

/**
 * SSH: known host keys (one per host:port, as the user accepted it) and connection profiles.
 * Private keys, passphrases and passwords are never stored here: they live in the keychain
 * under `ssh:profile:<id>:<kind>` accounts. Only the public key is kept, so the UI can show it.
 */
const migration: Migration = {
  version: 4,
  name: 'ssh',
  up(db) {
    db.exec(`
      CREATE TABLE ssh_known_hosts (
        host TEXT NOT NULL,
        port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
        key_type TEXT NOT NULL,
        key_base64 TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        added_at TEXT NOT NULL,
        PRIMARY KEY (host, port)
      );
      CREATE TABLE ssh_profiles (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
        username TEXT NOT NULL,
        auth_kind TEXT NOT NULL CHECK (auth_kind IN ('key', 'password')),
        public_key TEXT,
        jump_json TEXT NOT NULL DEFAULT '[]',
        keepalive_sec INTEGER NOT NULL DEFAULT 15,
        auto_reconnect INTEGER NOT NULL DEFAULT 1,
        agent_forward INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `);
  },
};
export default migration;
