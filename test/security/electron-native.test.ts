import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { abiOf, NATIVE_MODULES } from '../../scripts/native-abi.mjs';
import { prepareElectronNative } from '../../scripts/electron-native.mjs';
import { tempHome } from '../foundation/helpers';

const ROOT = join(__dirname, '..', '..');
const MODULES = join(ROOT, 'node_modules');
const ELECTRON = JSON.parse(readFileSync(join(MODULES, 'electron', 'package.json'), 'utf8')).version as string;

/** A project root whose node_modules is this one's (so the Node build is the real one). */
function projectRoot(): string {
  const root = tempHome('povdesk-start-');
  symlinkSync(MODULES, join(root, 'node_modules'));
  return root;
}

interface Ran {
  cmd: string;
  args: string[];
}

// Item 3 of the security review: `npm start` rebuilds better-sqlite3 and keytar for Electron's ABI
// into .electron-native/, never into the node_modules the CLI and the tests load. The rebuild
// itself needs the Electron headers from the network, which this machine cannot reach, so the
// command is checked here and the build is not run.
describe('npm start prepares native modules for Electron beside the Node build', () => {
  it('copies the two packages into .electron-native and runs @electron/rebuild there for the installed Electron only', () => {
    const root = projectRoot();
    const ran: Ran[] = [];
    const before = abiOf(join(MODULES, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']));
    const r = prepareElectronNative(root, (cmd: string, args: string[]) => {
      ran.push({ cmd, args });
      return { status: 1, signal: null };
    });
    expect(ran).toHaveLength(1);
    expect(realpathSync(ran[0]!.args[0]!)).toBe(join(realpathSync(MODULES), '@electron', 'rebuild', 'lib', 'cli.js'));
    expect(ran[0]!.args.slice(1)).toEqual(['--version', ELECTRON, '--module-dir', join(root, '.electron-native'), '--only', 'better-sqlite3,keytar', '--force']);
    const pkg = JSON.parse(readFileSync(join(root, '.electron-native', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['better-sqlite3', 'keytar']);
    for (const m of Object.keys(NATIVE_MODULES)) {
      const copy = join(root, '.electron-native', 'node_modules', m);
      expect(lstatSync(copy).isSymbolicLink()).toBe(false);
      expect(realpathSync(copy)).not.toBe(realpathSync(join(MODULES, m)));
    }
    expect(existsSync(join(root, '.electron-native', 'node_modules', 'cpu-features'))).toBe(false);
    // A failed rebuild says so and what it needs; the Node build is untouched.
    expect(r).toMatchObject({ ok: false, why: expect.stringMatching(/@electron\/rebuild could not build better-sqlite3 and keytar for Electron/) });
    expect(abiOf(join(MODULES, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']))).toEqual(before);
  });

  it('does not rebuild when the copies match the Electron and module versions and its ABI', () => {
    const root = projectRoot();
    // What a successful rebuild leaves: the copies, built for ABI 139 (Electron 38), and its stamp.
    const dir = join(root, '.electron-native');
    for (const [name, rel] of Object.entries(NATIVE_MODULES)) {
      mkdirSync(join(dir, 'node_modules', name, rel, '..'), { recursive: true });
      copyFileSync(join(MODULES, name, rel), join(dir, 'node_modules', name, rel));
    }
    const f = join(dir, 'node_modules', 'better-sqlite3', NATIVE_MODULES['better-sqlite3']);
    writeFileSync(f, Buffer.from(readFileSync(f).toString('latin1').replaceAll('node_register_module_v115', 'node_register_module_v139'), 'latin1'));
    const version = (m: string) => (JSON.parse(readFileSync(join(MODULES, m, 'package.json'), 'utf8')) as { version: string }).version;
    writeFileSync(join(dir, 'stamp.json'), JSON.stringify({ electron: ELECTRON, 'better-sqlite3': version('better-sqlite3'), keytar: version('keytar') }));
    const r = prepareElectronNative(root, () => {
      throw new Error('must not rebuild');
    });
    expect(r).toEqual({ ok: true, modulesDir: join(dir, 'node_modules'), rebuilt: false });
  });

  it('says how to get @electron/rebuild when it is not installed', () => {
    const root = tempHome('povdesk-start-');
    for (const m of ['electron', 'better-sqlite3', 'keytar']) {
      mkdirSync(join(root, 'node_modules', m), { recursive: true });
      copyFileSync(join(MODULES, m, 'package.json'), join(root, 'node_modules', m, 'package.json'));
    }
    const r = prepareElectronNative(root, () => {
      throw new Error('must not run');
    });
    expect(r).toEqual({ ok: false, why: expect.stringMatching(/@electron\/rebuild is not installed; run `npm install`/) });
  });
});
