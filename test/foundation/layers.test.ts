import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
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
 * What a file imports for its values, resolved: type-only imports and re-exports (which the build
 * erases) left out, dynamic `import('…')` included. Relative targets as repo-relative files; packages
 * by name.
 */
function valueImports(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      const typeOnly = c?.isTypeOnly || (!c?.name && named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly));
      if (!typeOnly) specs.push(n.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      const named = n.exportClause && ts.isNamedExports(n.exportClause) ? n.exportClause.elements : undefined;
      if (!n.isTypeOnly && !(named && named.length > 0 && named.every((e) => e.isTypeOnly))) specs.push(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(n.arguments[0]!)) {
      specs.push(n.arguments[0].text);
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return specs.map((s) => {
    if (!s.startsWith('.')) return s;
    const base = relative(ROOT, resolve(ROOT, dirname(file), s));
    return ['.ts', '.tsx', '/index.ts', '/index.tsx'].map((x) => base + x).find((f) => existsSync(join(ROOT, f))) ?? base;
  });
}

/** The chain of value imports from a renderer source to `pkg`, as "a -> b -> pkg", or null. */
function rendererReaches(pkg: string): string | null {
  const parent = new Map<string, string | null>(sources('renderer/src').map((f) => [f, null]));
  const queue = [...parent.keys()];
  while (queue.length) {
    const f = queue.shift()!;
    for (const t of valueImports(f)) {
      if (t === pkg || t.startsWith(`${pkg}/`)) {
        const chain = [t];
        for (let x: string | null = f; x; x = parent.get(x)!) chain.unshift(x);
        return chain.join(' -> ');
      }
      if (/\.tsx?$/.test(t) && !parent.has(t)) {
        parent.set(t, f);
        queue.push(t);
      }
    }
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

/**
 * The layering in docs/CONVENTIONS.md that needs the whole tree: import circles, and the daemon's
 * entry points (tsc -b checks the environments; ESLint the rest, below).
 */
describe('layers', () => {
  it('no source file imports in a circle: main/, preload/, renderer/, shared/ (a module two files need is a 3rd file both import)', () => {
    expect(circle([...sources('shared'), ...sources('renderer'), ...sources('main'), ...sources('preload')])).toBeNull();
  });

  it('app code reaches the vm-manager daemon only through main/vm-api/, apart from its documented entry points', () => {
    const offenders = [...appDirs(), 'preload']
      .flatMap(sources)
      .flatMap((f) =>
        targets(f)
          .filter((t) => under(t, 'main/vm-manager'))
          .map((t) => `${f} -> ${t}`),
      )
      .filter((edge) => !(edge in DAEMON_ENTRY_POINTS));
    expect(offenders).toEqual([]);
  });

  // One value from a contract file puts zod (~25 KiB gzip) into the renderer's bundle.
  it('the renderer reaches zod only through types (shared/contract/values.ts holds the values it needs)', () => {
    expect(rendererReaches('zod')).toBeNull();
  });

  it('every allowed daemon import still exists (drop an entry once its import is gone)', () => {
    const edges = new Set(['main', 'preload'].flatMap(sources).flatMap((f) => targets(f).map((t) => `${f} -> ${t}`)));
    expect([...Object.keys(DAEMON_ENTRY_POINTS)].filter((e) => !edges.has(e))).toEqual([]);
  });
});

/**
 * What one file shows is ESLint's (eslint.config.js, `povdesk/layers` and the channel rule; `npm run
 * lint` in `npm test`): where each layer may import from, electron, Node built-ins, channel names.
 * Here each rule meets a file that breaks it, so a config that stops checking fails this test.
 */
describe('layers, as ESLint checks them', () => {
  const lint = async (filePath: string, code: string) => {
    const [result] = await new ESLint({ cwd: ROOT }).lintText(code, { filePath: join(ROOT, filePath) });
    return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
  };
  const refused = (...parts: string[]) => parts.map((p) => expect.stringContaining(p));

  it('renderer/ and shared/ import only their own and shared/ (resolved, static and dynamic), no Node built-ins, no electron', async () => {
    expect(
      await lint(
        'renderer/src/pages/x.tsx',
        `import '../../../main/core/create'; import '../main'; import '../../../shared/csp'; export const f = () => ` +
          `import('../../../preload/index');`,
      ),
    ).toEqual(refused('main/core/create is outside', 'preload/index is outside'));
    expect(
      await lint(
        'shared/contract/x.ts',
        `import 'node:fs'; import 'path'; import 'electron'; import '../csp'; export type T = import('../../renderer/src/api').Api;`,
      ),
    ).toEqual(refused('no node:fs', 'no path', 'import electron', 'renderer/src/api is outside'));
  });

  it(
    'services, the daemon, its client and main/lib import only the layers below them; ' + 'only main/electron and preload import electron',
    async () => {
      expect(
        await lint(
          'main/services/pov/x.ts',
          // two lines: one would be over max-len (140), a message this test does not expect
          `import '../../core/create'; import 'electron'; import '../../lib/sleep';\n` +
            `import '../../vm-api/client'; import '../../../shared/csp'; export {};`,
        ),
      ).toEqual(refused('main/core/create is outside', 'import electron'));
      expect(await lint('main/vm-manager/x.ts', `import '../services/hub'; import '../vm-api/client'; export {};`)).toEqual(
        refused('main/services/hub is outside'),
      );
      expect(await lint('main/vm-api/x.ts', `import '../vm-manager/vms'; export {};`)).toEqual(refused('main/vm-manager/vms is outside'));
      expect(await lint('main/lib/x.ts', `import '../vm-api/client'; export {};`)).toEqual(refused('main/vm-api/client is outside'));
      expect(await lint('main/core/x.ts', `import 'electron/main'; export {};`)).toEqual(refused('import electron'));
      expect(await lint('main/electron/x.ts', `import 'electron'; export {};`)).toEqual([]);
    },
  );

  it('a channel name is written only in shared/contract/wire.ts (the povdesk:// link scheme is not one)', async () => {
    const code = "export const c = 'povdesk:pov-updated'; export const t = `povdesk:x`; export const link = 'povdesk://pov/1';";
    expect(await lint('renderer/src/x.ts', code)).toEqual(refused('shared/contract/wire.ts', 'shared/contract/wire.ts'));
    expect(await lint('shared/contract/wire.ts', code)).toEqual([]);
  });
});
