import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');

function sources(dir: string): string[] {
  return (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
    .filter((f) => /\.(ts|tsx)$/.test(f))
    .map((f) => join(ROOT, dir, f));
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"\n]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1] ?? m[2]!,
  );
}

/** The layering in docs/CONVENTIONS.md, checked over the sources. */
describe('layers', () => {
  it('only main/electron and preload import electron', () => {
    const offenders = ['main', 'shared', 'renderer']
      .flatMap(sources)
      .filter((f) => !relative(ROOT, f).startsWith('main/electron/'))
      .filter((f) => imports(f).includes('electron'));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('shared/ imports no Node built-ins and nothing from main/ or renderer/', () => {
    const offenders = sources('shared').filter((f) =>
      imports(f).some((i) => i.startsWith('node:') || /^(fs|path|os|child_process|crypto)$/.test(i) || /\/(main|renderer)\//.test(i)),
    );
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('renderer/ reaches the core only through renderer/src/api.ts (no main/ imports)', () => {
    const offenders = sources('renderer').filter((f) => imports(f).some((i) => /(^|\/)main\//.test(i) || i.startsWith('node:')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('no channel string is written outside shared/contract/wire.ts', () => {
    const offenders = ['main', 'preload', 'renderer', 'shared']
      .flatMap(sources)
      .filter((f) => !f.endsWith('shared/contract/wire.ts'))
      // An IPC channel is `povdesk:<name>`; the povdesk:// link scheme (main/desktop) is not a channel.
      .filter((f) => /['"`]povdesk:[a-z]/i.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});
