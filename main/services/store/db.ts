import type Database from 'better-sqlite3';
import { lazyRequire } from '../lazy';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { migrations, type Migration } from './migrations';

export type Db = Database.Database;
const sqlite = lazyRequire<typeof Database>('better-sqlite3');

/**
 * A better-sqlite3 connection. `nativeBinding` is the addon to load (the one main/electron/native.ts
 * checked); by default the package's prebuilt Node-API addon for this platform, named directly:
 * left to itself the package probes build/Debug, build/Release and the C library first.
 */
export function sqliteConnection(file: string, options: Database.Options = {}, nativeBinding?: string): Db {
  return new (sqlite())(file, { ...options, nativeBinding: nativeBinding ?? nodeAddon() });
}

let addon: string | null | undefined;
function nodeAddon(): string | undefined {
  if (addon === undefined) {
    const dir = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
    // a local build wins, as in the package's own lookup; else its prebuilt addon for this platform
    const files = [
      join(dir, 'build', 'Release', 'better_sqlite3.node'),
      join(dir, 'prebuilds', `${process.platform}-${process.arch}.node`),
    ];
    addon = files.find((f) => existsSync(f)) ?? null;
  }
  return addon ?? undefined;
}

/**
 * Opens (creating if needed) the app database: WAL journal, foreign keys on, synchronous=NORMAL
 * (WAL keeps every committed transaction across a process crash; only an OS crash could lose the
 * last ones), then applies pending migrations.
 */
export function openDatabase(file: string, list: readonly Migration[] = migrations, nativeBinding?: string): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  // nativeBinding: the addon main/electron/native.ts checked; Node finds its own.
  const db = sqliteConnection(file, {}, nativeBinding);
  try {
    // The wait first: another process may be creating or migrating the same fresh file right now.
    db.pragma('busy_timeout = 5000');
    enableWal(db, 5000);
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    migrate(db, list);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * Switches a fresh file to WAL (a no-op once it is WAL: the mode is stored in the file). The switch
 * needs an exclusive lock, and SQLite answers SQLITE_BUSY at once rather than through the busy
 * handler when another process is opening the same fresh file (seen: 7 of 12 paired opens failed
 * with "database is locked" here), so it is retried for up to `timeoutMs`.
 */
function enableWal(db: Db, timeoutMs: number): void {
  const until = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode === 'wal' || mode === 'memory') return; // ':memory:' databases have no WAL
      throw Object.assign(new Error(`journal mode stayed ${String(mode)}`), { code: 'SQLITE_BUSY' });
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > until) throw err;
      Atomics.wait(pause, 0, 0, 10 + Math.floor(Math.random() * 20));
    }
  }
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Applies each migration above the recorded version in its own transaction, recording the version
 * inside the same transaction: a failing migration rolls back whole and leaves the previous
 * schema (and data) untouched. Each transaction takes the write lock first (BEGIN IMMEDIATE) and
 * reads user_version inside it, so a second process migrating the same file at the same moment
 * waits, then sees the version already applied and skips it.
 */
export function migrate(db: Db, list: readonly Migration[]): void {
  const sorted = [...list].sort((a, b) => a.version - b.version);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.version === sorted[i - 1]!.version) {
      throw new Error(`two migrations claim version ${sorted[i]!.version}`);
    }
  }
  const current = schemaVersion(db);
  const newest = sorted.length ? sorted[sorted.length - 1]!.version : 0;
  if (current > newest) {
    throw new Error(
      `the database is at schema version ${current}, newer than this build knows (${newest}); ` +
        'use the newer POV Desk that wrote it, or restore a backup',
    );
  }
  for (const m of sorted) {
    if (m.version <= current) continue;
    const apply = db.transaction(() => {
      if (schemaVersion(db) >= m.version) return;
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
    });
    try {
      ensureMigrationTable(db);
      apply.immediate();
    } catch (err) {
      throw new Error(`migration ${m.version} (${m.name}) failed and was rolled back: ${(err as Error).message}`, { cause: err });
    }
  }
}

function ensureMigrationTable(db: Db): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
}
