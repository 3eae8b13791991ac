/**
 * The packaged app, made by the real electron-builder from the current build (test/packaging/pack.ts):
 * - every module the main process loads at run time is in the asar, and every module the CLI loads
 *   is in <resources>/cli outside it (imports resolved against the file lists, then for real by
 *   running them);
 * - native addons are unpacked from the asar; the RunAsNode fuse is on;
 * - the `povdesk` launcher runs the bundled CLI with the app's own runtime under
 *   ELECTRON_RUN_AS_NODE=1, from the install layouts it supports (Node stands in for Electron),
 *   with app.asar gone: no file inside the asar is needed to run it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managerCommand } from '../../main/services/vm/supervisor';
import { APP_VERSION } from '../../shared/version';
import { builderRequire, packLinuxDir, type Packed } from './pack';

const asar = builderRequire('@electron/asar') as {
  listPackage(p: string, o: object): string[];
  statFile(p: string, f: string): { unpacked?: boolean };
  extractAll(p: string, dest: string): void;
  extractFile(p: string, f: string): Buffer;
};
const fuses = builderRequire('@electron/fuses') as { getCurrentFuseWire(p: string): Promise<Record<number, number>> };

let packed: Packed;
let files: Set<string>;

beforeAll(() => {
  packed = packLinuxDir();
  files = new Set(asar.listPackage(join(packed.resources, 'app.asar'), {}).map((f) => f.replace(/\\/g, '/')));
}, 240_000);

afterAll(() => {
  if (packed) rmSync(dirname(dirname(packed.appDir)), { recursive: true, force: true });
});

/** The specifiers a built ES module imports (static, dynamic, re-exports, and createRequire calls). */
function specifiers(code: string): string[] {
  const out = new Set<string>();
  const statements = [
    /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"'\s]+)["']/gm, // import … from "x", export … from "x"
    /^\s*import\s*["']([^"'\s]+)["']/gm, // import "x"
    /\bimport\(\s*["']([^"'\s]+)["']\s*\)/g, // import("x")
    /(?<![`'"])\brequire\(\s*["']([^"'\s]+)["']\s*\)/g, // require("x") (createRequire), not inside a string (ajv's code generation)
  ];
  for (const re of statements) {
    for (const m of code.matchAll(re)) out.add(m[1]!);
  }
  return [...out];
}

const isBuiltin = (s: string) => s.startsWith('node:') || builtinModules.includes(s);
const packageName = (s: string) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!);

/** Walks relative imports from `entry` inside a file list; returns the bare (package) imports seen. */
function walk(
  entry: string,
  has: (p: string) => boolean,
  read: (p: string) => string,
): { missing: string[]; packages: Set<string>; subpaths: Map<string, Set<string>> } {
  const missing: string[] = [];
  const packages = new Set<string>();
  const subpaths = new Map<string, Set<string>>();
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!has(file)) {
      missing.push(file);
      continue;
    }
    for (const s of specifiers(read(file))) {
      if (s.startsWith('.')) queue.push(posix.join(posix.dirname(file), s));
      else if (!isBuiltin(s)) {
        const name = packageName(s);
        packages.add(name);
        subpaths.set(name, (subpaths.get(name) ?? new Set()).add(`.${s.slice(name.length)}`));
      }
    }
  }
  return { missing, packages, subpaths };
}

/** The file Node picks for `import` of `sub` ('.' or './x') of a package (exports → import/node/default, else main). */
function packageEntry(pkgDir: string, pkg: { main?: string; exports?: unknown }, sub = '.'): string {
  let target: unknown = pkg.exports;
  if (target && typeof target === 'object' && sub in (target as object)) target = (target as Record<string, unknown>)[sub];
  else if (sub !== '.' && target && typeof target === 'object') {
    // a pattern such as "./*": { import: "./dist/esm/*" }, else the file itself
    const star = Object.keys(target).find((k) => k.endsWith('*') && sub.startsWith(k.slice(0, -1)));
    target = star
      ? JSON.parse(JSON.stringify((target as Record<string, unknown>)[star]).replaceAll('*', sub.slice(star.length - 1)))
      : undefined;
  } else if (sub !== '.') target = undefined;
  while (target && typeof target === 'object') {
    const t = target as Record<string, unknown>;
    target = t.node ?? t.import ?? t.default ?? t.require;
  }
  const rel = typeof target === 'string' ? target : sub !== '.' ? sub : (pkg.main ?? 'index.js');
  const file = posix.join(pkgDir, rel);
  return /\.[cm]?js$|\.json$|\.node$/.test(file) ? file : `${file}.js`;
}

describe('the packaged file list', () => {
  const readAsar = (p: string) => asar.extractFile(join(packed.resources, 'app.asar'), p.slice(1)).toString('utf8');

  /** Every module `entry` imports is in the file list, and every package it names with its entry file. */
  function holdsImports(entry: string, has: (p: string) => boolean, read: (p: string) => string, where: string): void {
    const { missing, packages, subpaths } = walk(entry, has, read);
    expect(missing, `${entry}: modules missing from ${where}`).toEqual([]);
    packages.delete('electron'); // provided by the runtime
    for (const name of packages) {
      const dir = `/node_modules/${name}`;
      expect(has(`${dir}/package.json`), `${entry} imports ${name}, which is not in ${where}`).toBe(true);
      const meta = JSON.parse(read(`${dir}/package.json`)) as { main?: string; exports?: unknown };
      for (const sub of subpaths.get(name) ?? ['.']) {
        const main = packageEntry(dir, meta, sub);
        expect(has(main) || has(`${main.replace(/\.js$/, '')}/index.js`), `${name}'s entry ${main} (for ${sub}) is not in ${where}`).toBe(
          true,
        );
      }
    }
  }

  it('holds every module the main process imports in app.asar, and every package it names with its entry file', () => {
    holdsImports('/out/main/index.js', (p) => files.has(p), readAsar, 'app.asar');
    expect(walk('/out/main/index.js', (p) => files.has(p), readAsar).packages.size).toBeGreaterThan(0);
  });

  it('holds every module and package the CLI imports in <resources>/cli, outside the asar, and nothing of the CLI in the asar', () => {
    const cli = join(packed.resources, 'cli');
    holdsImports(
      '/povdesk-cli.mjs',
      (p) => existsSync(join(cli, p)),
      (p) => readFileSync(join(cli, p), 'utf8'),
      '<resources>/cli',
    );
    // the packages it requires at run time (main/services/lazy.ts, keytar; no static import is left) are beside it
    for (const name of ['better-sqlite3', 'keytar', 'ssh2', 'undici', 'ws'])
      expect(existsSync(join(cli, 'node_modules', name, 'package.json')), name).toBe(true);
    expect([...files].some((f) => f.startsWith('/out/cli/'))).toBe(false);
  });

  it('unpacks every native addon from the asar and leaves out ssh2’s optional cpu-features and other platforms’ addons', () => {
    const natives = [...files].filter((f) => f.endsWith('.node'));
    expect(natives.filter((f) => f.startsWith('/node_modules/better-sqlite3/'))).toEqual([
      '/node_modules/better-sqlite3/prebuilds/linux-x64.node',
    ]);
    expect(natives.some((f) => f.startsWith('/node_modules/keytar/'))).toBe(true);
    for (const f of natives) {
      expect(asar.statFile(join(packed.resources, 'app.asar'), f.slice(1)).unpacked, `${f} is inside the asar`).toBe(true);
      expect(existsSync(join(packed.resources, 'app.asar.unpacked', f))).toBe(true);
    }
    expect([...files].some((f) => f.startsWith('/node_modules/cpu-features/'))).toBe(false);
  });

  it('ships the daemon outside the asar as one file that imports only Node built-ins, with its guest files', () => {
    const dir = join(packed.resources, 'vm-manager');
    const daemon = readFileSync(join(dir, 'vm-manager.mjs'), 'utf8');
    expect(specifiers(daemon).filter((s) => !isBuiltin(s))).toEqual([]);
    for (const f of ['guest/init.sh', 'guest/metadata-proxy.cjs', 'attest/guest-quote.sh'])
      expect(existsSync(join(dir, 'vm-manager-assets', f)), f).toBe(true);
    expect(managerCommand({}, packed.resources)).toEqual({ argv: [process.execPath, join(dir, 'vm-manager.mjs')], cwd: dir });
  });

  it('keeps the RunAsNode fuse on (the daemon and the CLI need it)', async () => {
    const wire = await fuses.getCurrentFuseWire(packed.runtime);
    expect(wire[0 /* FuseV1Options.RunAsNode */]).toBe(49 /* FuseState.ENABLE */);
    const off = packLinuxDir(['-c.electronFuses.runAsNode=false']);
    try {
      expect((await fuses.getCurrentFuseWire(off.runtime))[0]).toBe(48 /* DISABLE */);
    } finally {
      rmSync(dirname(dirname(off.appDir)), { recursive: true, force: true });
    }
  }, 240_000);
});

describe('running the packaged tree (Node standing in for the Electron runtime)', () => {
  let app: string;
  beforeAll(() => {
    // Node cannot read app.asar; unpack it to resources/app, the layout Electron also loads.
    app = join(mkdtempSync(join(tmpdir(), 'povdesk-app-')), 'POV Desk');
    cpSync(packed.appDir, app, { recursive: true, verbatimSymlinks: true });
    asar.extractAll(join(app, 'resources', 'app.asar'), join(app, 'resources', 'app'));
    rmSync(join(app, 'resources', 'app.asar'));
    rmSync(join(app, 'resources', 'app.asar.unpacked'), { recursive: true });
  }, 120_000);
  afterAll(() => rmSync(dirname(app), { recursive: true, force: true }));

  const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const env0 = { ...process.env };
    delete env0.ELECTRON_RUN_AS_NODE;
    return spawnSync(cmd, args, { encoding: 'utf8', env: { ...env0, POVDESK_HOME: join(dirname(app), 'home'), ...env }, timeout: 60_000 });
  };

  it('resources/bin/povdesk runs the bundled CLI with the app binary under ELECTRON_RUN_AS_NODE=1', () => {
    const r = run(join(app, 'resources', 'bin', 'povdesk'), ['--version']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(APP_VERSION);
    const help = run(join(app, 'resources', 'bin', 'povdesk'), ['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('povdesk vm-manager');
  });

  it('works through a symlink (macOS "Install command-line tool") and as a copy pointed at the app (the deb)', () => {
    const bin = mkdtempSync(join(tmpdir(), 'povdesk-bin-'));
    try {
      symlinkSync(join(app, 'resources', 'bin', 'povdesk'), join(bin, 'povdesk'));
      expect(run(join(bin, 'povdesk'), ['--version']).stdout).toContain(APP_VERSION);
      mkdirSync(join(bin, 'usr-bin'));
      cpSync(join(app, 'resources', 'bin', 'povdesk'), join(bin, 'usr-bin', 'povdesk'));
      const noApp = run(join(bin, 'usr-bin', 'povdesk'), ['--version']);
      expect(noApp.status).toBe(127);
      expect(noApp.stderr).toMatch(/cannot find the POV Desk app .*set POVDESK_APP_DIR/);
      expect(run(join(bin, 'usr-bin', 'povdesk'), ['--version'], { POVDESK_APP_DIR: app }).stdout).toContain(APP_VERSION);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('the launcher runs the CLI with app.asar and its unpacked folder gone (nothing inside the asar is needed)', () => {
    const bare = join(dirname(app), 'no-asar');
    cpSync(packed.appDir, bare, { recursive: true, verbatimSymlinks: true });
    rmSync(join(bare, 'resources', 'app.asar'));
    rmSync(join(bare, 'resources', 'app.asar.unpacked'), { recursive: true });
    const help = run(join(bare, 'resources', 'bin', 'povdesk'), ['--help']);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('povdesk vm-manager');
    // a call through the real core: SQLite (better-sqlite3 from <resources>/cli/node_modules) and the keyring probe
    const settings = run(join(bare, 'resources', 'bin', 'povdesk'), ['call', 'settings.get', '{}']);
    expect(settings.status, settings.stderr).toBe(0);
    expect(JSON.parse(settings.stdout)).toHaveProperty('skytap.url');
  });

  it('the bootstrap refuses to run without ELECTRON_RUN_AS_NODE, and says which CLI is missing', () => {
    const bootstrap = join(app, 'resources', 'bin', 'povdesk-cli.cjs');
    const plain = run(process.execPath, [bootstrap, '--version']);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toMatch(/ELECTRON_RUN_AS_NODE=1/);
    cpSync(join(app, 'resources', 'bin'), join(dirname(app), 'lonely-bin'), { recursive: true });
    const lonely = run(process.execPath, [join(dirname(app), 'lonely-bin', 'povdesk-cli.cjs')], { ELECTRON_RUN_AS_NODE: '1' });
    expect(lonely.status).toBe(127);
    expect(lonely.stderr).toMatch(/the app's CLI is missing \(looked in .*cli\/povdesk-cli\.mjs/);
    // An AppImage wrapper runs the bootstrap from outside the image; $APPDIR names the mount.
    const viaAppDir = run(process.execPath, [join(dirname(app), 'lonely-bin', 'povdesk-cli.cjs'), '--version'], {
      ELECTRON_RUN_AS_NODE: '1',
      APPDIR: app,
    });
    expect(viaAppDir.stdout).toContain(APP_VERSION);
  });

  it('the packaged daemon starts from resources/vm-manager with the runtime under ELECTRON_RUN_AS_NODE=1', () => {
    const r = run(join(app, 'povdesk-desktop'), [join(app, 'resources', 'vm-manager', 'vm-manager.mjs'), '--help'], {
      ELECTRON_RUN_AS_NODE: '1',
    });
    expect(r.stdout + r.stderr).toContain('povdesk vm-manager serve');
    const refused = run(join(app, 'povdesk-desktop'), [join(app, 'resources', 'vm-manager', 'vm-manager.mjs'), '--help']);
    expect(refused.status).toBe(9); // the stand-in, like Electron, needs the variable to act as Node
  });

  it('the native addon loads from the packaged tree, for the app and for the CLI', () => {
    for (const mod of [
      join(app, 'resources', 'app', 'node_modules', 'better-sqlite3'),
      join(app, 'resources', 'cli', 'node_modules', 'better-sqlite3'),
    ]) {
      const script =
        `const D=require(${JSON.stringify(mod)});const d=new D(':memory:');` +
        `process.stdout.write(String(d.prepare('select 41+1 as x').get().x))`;
      expect(
        execFileSync(join(app, 'povdesk-desktop'), ['-e', script], {
          encoding: 'utf8',
          env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
        }),
      ).toBe('42');
    }
  });

  it('has no stray build output in the app folder', () => {
    expect(readdirSync(join(app, 'resources')).sort()).toEqual(['app', 'app-update.yml', 'bin', 'cli', 'icons', 'vm-manager']);
  });
});
