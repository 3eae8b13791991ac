import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * The project's own tsconfig files over a few small sources: `tsc -b` (npm run typecheck) must pass
 * on them, and fail once a renderer file imports a Node module or a shared file uses the DOM or Node.
 */
describe('tsc -b type-checks each environment on its own', () => {
  let dir: string;

  /** tsc -b in the copy: its exit code and what it printed. */
  function build(): { code: number; out: string } {
    try {
      return { code: 0, out: execFileSync(process.execPath, [TSC, '-b'], { cwd: dir, encoding: 'utf8', stdio: 'pipe' }) };
    } catch (e) {
      const err = e as { status: number | null; stdout: string; stderr: string };
      return { code: err.status ?? -1, out: err.stdout + err.stderr };
    }
  }

  /** Builds with one extra file in place, then takes it out again. */
  function buildWith(file: string, text: string): { code: number; out: string } {
    writeFileSync(join(dir, file), text);
    try {
      return build();
    } finally {
      rmSync(join(dir, file));
    }
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'povdesk-tsc-'));
    for (const f of readdirSync(ROOT).filter((f) => /^tsconfig.*\.json$/.test(f))) copyFileSync(join(ROOT, f), join(dir, f));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    for (const d of ['shared', 'main', 'renderer', 'test']) mkdirSync(join(dir, d));
    copyFileSync(join(ROOT, 'shared', 'web-globals.d.ts'), join(dir, 'shared', 'web-globals.d.ts'));
    writeFileSync(join(dir, 'shared', 'words.ts'), `export const host = (url: string): string => new URL(url).hostname;\n`);
    writeFileSync(
      join(dir, 'main', 'read.ts'),
      `import { readFileSync } from 'node:fs';\nimport { host } from '../shared/words';\n` +
        `export const read = (f: string): string => host(readFileSync(f, 'utf8')) + process.pid;\n`,
    );
    writeFileSync(
      join(dir, 'renderer', 'title.ts'),
      `import { host } from '../shared/words';\nexport const title = (): string => host(document.location.href);\n`,
    );
    writeFileSync(
      join(dir, 'test', 'all.ts'),
      `import { read } from '../main/read';\nimport { title } from '../renderer/title';\n` +
        `export const both = (): string => read('x') + title();\n`,
    );
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes on code that keeps to its environment', () => {
    const r = build();
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('fails on a renderer file importing node:fs', () => {
    const r = buildWith('renderer/bad.ts', `import { readFileSync } from 'node:fs';\nexport const bad = readFileSync;\n`);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(`renderer/bad.ts(1,30): error TS2307: Cannot find module 'node:fs'`);
  }, 120_000);

  it('fails on a renderer file importing main/', () => {
    const r = buildWith('renderer/bad.ts', `import { read } from '../main/read';\nexport const bad = read;\n`);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(
      /error TS6307: File '.*main\/read\.ts' is not listed within the file list of project '.*tsconfig\.renderer\.json'/,
    );
  }, 120_000);

  it('fails on a shared file using document, Buffer or process', () => {
    const r = buildWith(
      'shared/bad.ts',
      `export const a = (): string => document.title;\nexport const b = Buffer.from('x');\nexport const c = process.pid;\n`,
    );
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(`shared/bad.ts(1,32): error TS2584: Cannot find name 'document'`);
    expect(r.out).toContain(`shared/bad.ts(2,18): error TS2591: Cannot find name 'Buffer'`);
    expect(r.out).toContain(`shared/bad.ts(3,18): error TS2591: Cannot find name 'process'`);
  }, 120_000);
});
