import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');

/** Repo-relative paths of a directory's .ts/.tsx files; none when the directory does not exist (yet). */
function sources(dir: string): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return (readdirSync(join(ROOT, dir), { recursive: true }) as string[]).filter((f) => /\.(ts|tsx)$/.test(f)).map((f) => join(dir, f));
}

/** Every module specifier a file imports or re-exports, dynamic `import('…')` included (TypeScript's own scanner). */
function imports(file: string): string[] {
  return ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** Where a file's relative imports point, as repo-relative paths without extension ("main/core/streams"). */
function targets(file: string): string[] {
  return imports(file)
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)));
}

const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** "file -> target" for every relative import of `files` that lands outside `allowed`. */
function outside(files: string[], allowed: string[]): string[] {
  return files.flatMap((f) => targets(f).filter((t) => !allowed.some((d) => under(t, d))).map((t) => `${f} -> ${t}`));
}

/**
 * The first import circle among `files`, as "a -> b -> a", or null. Type-only imports count (as
 * madge counts them): a reader still goes round the circle to understand either file.
 */
function circle(files: string[]): string | null {
  const byPath = new Map(files.map((f) => [f.replace(/\.tsx?$/, ''), f]));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (f: string): string | null => {
    if (state.get(f) === 'done') return null;
    if (state.get(f) === 'open') return [...path.slice(path.indexOf(f)), f].join(' -> ');
    state.set(f, 'open');
    path.push(f);
    for (const t of targets(f)) {
      const next = byPath.get(t) ?? byPath.get(`${t}/index`);
      const found = next ? visit(next) : null;
      if (found) return found;
    }
    path.pop();
    state.set(f, 'done');
    return null;
  };
  for (const f of files) {
    const found = visit(f);
    if (found) return found;
  }
  return null;
}

/**
 * Imports of the vm-manager daemon by app code that stay: the daemon ships inside the app and these
 * are its documented ways in. Each is one "file -> target".
 */
const DAEMON_ENTRY_POINTS: Record<string, string> = {
  // `povdesk vm-manager …` runs the daemon (and its own CLI) from the same binary (docs/vm-manager.md).
  'main/cli/subcommands.ts -> main/vm-manager/cli': 'the cli subcommand that launches the daemon',
  // The owner's MCP endpoint answers streamable HTTP with the daemon's stateless answerer, so the
  // two MCP servers share one request path instead of two copies.
  'main/mcp/http.ts -> main/vm-manager/mcp': "the vm-manager's MCP answerer",
  // When the local daemon cannot start (no QEMU, swtpm or OVMF), the app runs the daemon's host
  // probe itself so the Local VMs page can list what is missing (VmService.host).
  'main/services/vm/service.ts -> main/vm-manager/host': 'host report when the daemon cannot start',
};

/** The directories under main/ that are app code: everything but the daemon and what it may share. */
const appDirs = () =>
  readdirSync(join(ROOT, 'main'))
    .map((d) => `main/${d}`)
    .filter((d) => !['main/vm-manager', 'main/vm-api', 'main/lib'].includes(d));

/** The layering in docs/CONVENTIONS.md, checked over the sources (tsc -b checks the environments). */
describe('layers', () => {
  it('only main/electron and preload import electron', () => {
    const offenders = ['main', 'shared', 'renderer']
      .flatMap(sources)
      .filter((f) => !f.startsWith('main/electron/'))
      .filter((f) => imports(f).includes('electron'));
    expect(offenders).toEqual([]);
  });

  it('shared/ imports no Node built-ins and nothing outside shared/', () => {
    const builtins = sources('shared').filter((f) => imports(f).some((i) => i.startsWith('node:') || /^(fs|path|os|child_process|crypto)$/.test(i)));
    expect(builtins).toEqual([]);
    expect(outside(sources('shared'), ['shared'])).toEqual([]);
  });

  it('renderer/ imports nothing from main/ or preload/ and no Node built-ins (it reaches the core through renderer/src/api.ts)', () => {
    expect(sources('renderer').filter((f) => imports(f).some((i) => i.startsWith('node:')))).toEqual([]);
    expect(outside(sources('renderer'), ['renderer', 'shared'])).toEqual([]);
  });

  it('no source file imports in a circle: main/, preload/, renderer/, shared/ (a module two files need is a third file both import)', () => {
    expect(circle([...sources('shared'), ...sources('renderer'), ...sources('main'), ...sources('preload')])).toBeNull();
  });

  it('services never import main/core or a transport: they import services, shared/, main/vm-api/ and main/lib/', () => {
    // main/vm-manager is policed by the daemon rule below (entry points and pending moves).
    const offenders = outside(sources('main/services'), ['main/services', 'shared', 'main/vm-api', 'main/lib', 'main/vm-manager']);
    expect(offenders).toEqual([]);
  });

  it('main/vm-manager (the daemon) imports only shared/, main/vm-api/ and main/lib/', () => {
    expect(outside(sources('main/vm-manager'), ['main/vm-manager', 'shared', 'main/vm-api', 'main/lib'])).toEqual([]);
  });

  it('main/vm-api/ (the client both sides use) imports only shared/ and main/lib/; main/lib/ only shared/', () => {
    expect(outside(sources('main/vm-api'), ['main/vm-api', 'shared', 'main/lib'])).toEqual([]);
    expect(outside(sources('main/lib'), ['main/lib', 'shared'])).toEqual([]);
  });

  it('app code reaches the vm-manager daemon only through main/vm-api/, apart from its documented entry points', () => {
    const offenders = [...appDirs(), 'preload']
      .flatMap(sources)
      .flatMap((f) => targets(f).filter((t) => under(t, 'main/vm-manager')).map((t) => `${f} -> ${t}`))
      .filter((edge) => !(edge in DAEMON_ENTRY_POINTS));
    expect(offenders).toEqual([]);
  });

  it('every allowed daemon import still exists (drop an entry once its import is gone)', () => {
    const edges = new Set(['main', 'preload'].flatMap(sources).flatMap((f) => targets(f).map((t) => `${f} -> ${t}`)));
    expect([...Object.keys(DAEMON_ENTRY_POINTS)].filter((e) => !edges.has(e))).toEqual([]);
  });

  it('no channel string is written outside shared/contract/wire.ts', () => {
    const offenders = ['main', 'preload', 'renderer', 'shared']
      .flatMap(sources)
      .filter((f) => f !== 'shared/contract/wire.ts')
      // An IPC channel is `povdesk:<name>`; the povdesk:// link scheme (main/desktop) is not a channel.
      .filter((f) => /['"`]povdesk:[a-z]/i.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
