import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase, schemaVersion } from '../../main/services/store/db';
import { migrations } from '../../main/services/store/migrations';
import { getPov } from '../../main/services/pov/repo';
import type { Migration } from '../../main/services/store/migration';
import { tempHome } from './helpers';

describe('store', () => {
  it('opens in WAL mode with foreign keys on and records the schema version', () => {
    const db = openDatabase(join(tempHome(), 'a.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(schemaVersion(db)).toBe(Math.max(...migrations.map((m) => m.version)));
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[];
    expect(rows.map((r) => r.version)).toEqual([...migrations].map((m) => m.version).sort((a, b) => a - b));
    db.close();
  });

  it('a failing migration leaves the previous database untouched', () => {
    const file = join(tempHome(), 'b.db');
    const first: Migration = { version: 1, name: 'one', up: (db) => db.exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)') };
    const broken: Migration = {
      version: 2,
      name: 'two',
      up: (db) => {
        db.exec('CREATE TABLE u (y INTEGER); INSERT INTO t VALUES (2)');
        throw new Error('boom');
      },
    };
    openDatabase(file, [first]).close();
    expect(() => openDatabase(file, [first, broken])).toThrow(/migration 2 \(two\) failed and was rolled back: boom/);
    const db = new Database(file);
    expect(schemaVersion(db)).toBe(1);
    expect(db.prepare('SELECT x FROM t').all()).toEqual([{ x: 1 }]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'u'").get()).toBeUndefined();
    db.close();
  });

  it('refuses a database from a newer build', () => {
    const file = join(tempHome(), 'c.db');
    const db = new Database(file);
    db.pragma('user_version = 999');
    expect(() => migrate(db, migrations)).toThrow(/newer than this build/);
    db.close();
  });

  it('SIGKILL during a burst of writes: the database opens, migrates, passes integrity_check, keeps every acknowledged write', async () => {
    const home = tempHome();
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'burst-writer.ts'), home], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acked: string[] = [];
    let buf = '';
    let errText = '';
    child.stderr.on('data', (b) => (errText += b));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => {
        buf += b.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) if (l.startsWith('ack ')) acked.push(l.slice(4));
        if (acked.length >= 1500 && !child.killed) child.kill('SIGKILL');
      });
      child.once('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited on its own: ${errText}`))));
    });
    expect(acked.length).toBeGreaterThanOrEqual(1500);
    const db = openDatabase(join(home, 'povdesk.db'));
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const have = new Set((db.prepare('SELECT id FROM jobs').all() as { id: string }[]).map((r) => r.id));
    const missing = acked.filter((id) => !have.has(id));
    expect(missing).toEqual([]);
    db.close();
  }, 60_000);
});

describe('migration 14: povs.skytap_name → env_name', () => {
  it("an old-schema database file opens with each POV's environment name under env_name", () => {
    const file = join(tempHome(), 'old.db');
    const old = openDatabase(
      file,
      migrations.filter((m) => m.version < 14),
    );
    old
      .prepare(
        "INSERT INTO povs (id, name, template_id, template_name, skytap_name, state, created_at, updated_at) VALUES ('p1', 'Old', " +
          "'t', '', 'Old [povdesk p1]', 'active', 'x', 'x')",
      )
      .run();
    old.close();

    const db = openDatabase(file);
    const columns = (db.prepare('PRAGMA table_info(povs)').all() as { name: string }[]).map((c) => c.name);
    expect(columns).toContain('env_name');
    expect(columns).not.toContain('skytap_name');
    expect(getPov(db, 'p1')).toMatchObject({ name: 'Old', env_name: 'Old [povdesk p1]' });
    db.close();
  });
});
