import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../main/services/store/db';
import { migrations } from '../../main/services/store/migrations';
import { JobRunner } from '../../main/services/jobs/runner';
import { methods } from '../../shared/contract';
import { JOB_KIND, JOB_KINDS, LEGACY_JOB_KINDS } from '../../shared/contract/job-kinds';
import { tempHome } from './helpers';

describe('job kinds', () => {
  it('each is a contract method that starts a job', () => {
    for (const kind of JOB_KINDS) expect(methods[kind as keyof typeof methods], kind).toMatchObject({ job: true });
  });

  it('migration 9 renames the kinds stored before the closed list, and the history reads them', () => {
    const file = join(tempHome(), 'kinds.db');
    const before = openDatabase(
      file,
      migrations.filter((m) => m.version < 9),
    );
    const insert = before.prepare(`INSERT INTO jobs (id, kind, title, state, created_at) VALUES (?, ?, 't', 'succeeded', ?)`);
    const legacy = Object.keys(LEGACY_JOB_KINDS);
    legacy.forEach((kind, i) => insert.run(`j${i}`, kind, `2026-01-01T00:00:0${i}.000Z`));
    insert.run('jv', 'vm.create', '2026-01-01T00:00:09.000Z');
    before.close();

    const db = openDatabase(file);
    const kinds = Object.fromEntries(
      (db.prepare('SELECT id, kind FROM jobs').all() as { id: string; kind: string }[]).map((r) => [r.id, r.kind]),
    );
    expect(kinds).toEqual({
      ...Object.fromEntries(legacy.map((kind, i) => [`j${i}`, LEGACY_JOB_KINDS[kind]])),
      jv: 'vm.create',
    });
    expect(
      new JobRunner(db)
        .list({ includeRoutine: true })
        .map((j) => j.kind)
        .sort(),
    ).toEqual(Object.values(kinds).sort());
    db.close();
  });

  it('migration 13 renames the bake jobs stored as templates.bake / templates.export, and the history reads them', () => {
    const file = join(tempHome(), 'bake-kinds.db');
    const before = openDatabase(
      file,
      migrations.filter((m) => m.version < 13),
    );
    const insert = before.prepare(`INSERT INTO jobs (id, kind, title, state, created_at) VALUES (?, ?, 't', 'succeeded', ?)`);
    insert.run('b', 'templates.bake', '2026-01-01T00:00:01.000Z');
    insert.run('e', 'templates.export', '2026-01-01T00:00:02.000Z');
    insert.run('v', 'vm.create', '2026-01-01T00:00:03.000Z');
    before.close();

    const db = openDatabase(file);
    const kinds = Object.fromEntries(
      (db.prepare('SELECT id, kind FROM jobs').all() as { id: string; kind: string }[]).map((r) => [r.id, r.kind]),
    );
    expect(kinds).toEqual({ b: JOB_KIND.bakeStart, e: JOB_KIND.bakeExport, v: 'vm.create' });
    expect(
      new JobRunner(db)
        .list({ includeRoutine: true })
        .map((j) => j.kind)
        .sort(),
    ).toEqual(['bake.export', 'bake.start', 'vm.create']);
    db.close();
  });
});
