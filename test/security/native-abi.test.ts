import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { electronNative } from '../../main/electron/native';
import { openDatabase } from '../../main/services/store/db';
import { abiOf, addonFile, nativeProblems, NATIVE_MODULES } from '../../scripts/native-abi.mjs';
import { tempHome } from '../foundation/helpers';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const MODULES = join(ROOT, 'node_modules');
const SQLITE = addonFile(MODULES, 'better-sqlite3');
const KEYTAR = addonFile(MODULES, 'keytar');
const NODE_ABI = Number(process.versions.modules);
const OTHER_ABI = NODE_ABI + 13;

/**
 * An app folder whose node_modules holds the real addons, better-sqlite3's rewritten to claim a V8
 * ABI (`node_register_module_v<abi>`) instead of Node-API: what a NAN module built for one runtime
 * looks like. Same length, so the file stays a valid shared object: only the symbol changes.
 */
function appBuiltFor(abi: number): string {
  const app = tempHome('povdesk-native-');
  const dir = join(app, 'node_modules');
  for (const name of Object.keys(NATIVE_MODULES) as (keyof typeof NATIVE_MODULES)[]) {
    const to = addonFile(dir, name).replace(/prebuilds\/[^/]+$/, join('build', 'Release', `${name.replace('-', '_')}.node`));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(addonFile(MODULES, name), to);
  }
  const f = addonFile(dir, 'better-sqlite3');
  const symbol = `node_register_module_v${abi}`;
  writeFileSync(
    f,
    Buffer.from(
      readFileSync(f).toString('latin1').replace('napi_register_module_v1', symbol.padEnd('napi_register_module_v1'.length, '_')),
      'latin1',
    ),
  );
  return app;
}

// Item 3 of the security review: the ABI each native module was built for, from its own bytes.
describe('the native module ABI reader', () => {
  it('reads both modules the app loads as Node-API modules, which load in Node and Electron alike', () => {
    expect(abiOf(SQLITE)).toEqual({ kind: 'napi', version: 1 });
    expect(abiOf(KEYTAR)).toEqual({ kind: 'napi', version: 1 });
  });

  it('finds better-sqlite3’s prebuilt addon for this platform when nothing was compiled locally', () => {
    expect(SQLITE).toBe(join(MODULES, 'better-sqlite3', 'prebuilds', `${process.platform}-${process.arch}.node`));
  });

  it('finds no ABI in a file that is not an addon', () => {
    expect(abiOf(join(ROOT, 'package.json'))).toBeNull();
  });

  it('reports no problem here for Node nor for any other runtime ABI', () => {
    expect(nativeProblems(MODULES, process.versions.modules)).toEqual([]);
    expect(nativeProblems(MODULES, OTHER_ABI)).toEqual([]);
  });

  it('a module built for one V8 ABI loads only there, and a missing one is a problem', () => {
    const dir = join(appBuiltFor(OTHER_ABI), 'node_modules');
    expect(abiOf(addonFile(dir, 'better-sqlite3'))).toEqual({ kind: 'node', abi: OTHER_ABI });
    expect(nativeProblems(dir, OTHER_ABI)).toEqual([]);
    expect(nativeProblems(dir, NODE_ABI)[0]).toMatch(new RegExp(`built for ABI ${OTHER_ABI}, this runtime needs ABI ${NODE_ABI}`));
    expect(nativeProblems(join(dir, 'nowhere'), OTHER_ABI)).toHaveLength(2);
  });

  it('the script reports each file and exits 1 with what to do on a mismatch', async () => {
    const ok = await run(process.execPath, [join(ROOT, 'scripts/native-abi.mjs'), '--expect', String(OTHER_ABI)], { cwd: ROOT });
    expect(ok.stdout).toContain(`${process.platform}-${process.arch}.node: Node-API v1`);
    expect(ok.stdout).toContain('keytar.node: Node-API v1');
    const dir = join(appBuiltFor(OTHER_ABI), 'node_modules');
    const bad = await run(process.execPath, [join(ROOT, 'scripts/native-abi.mjs'), dir, '--expect', String(NODE_ABI)], { cwd: ROOT }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect((bad as { code: number }).code).toBe(1);
    expect((bad as { stdout: string }).stdout).toContain('MISMATCH');
    expect((bad as { stderr: string }).stderr).toMatch(/npm ci/);
  });
});

describe('the Electron app refuses native modules of another ABI', () => {
  it('starts with the Node-API modules in node_modules, handing createCore their paths', () => {
    expect(electronNative(ROOT, String(OTHER_ABI))).toEqual({
      ok: true,
      native: { sqliteBinding: SQLITE, keytarModule: join(MODULES, 'keytar') },
    });
  });

  it('refuses a module built for another ABI with what to do', () => {
    const check = electronNative(appBuiltFor(NODE_ABI), String(OTHER_ABI));
    expect(check.ok).toBe(false);
    const message = (check as { message: string }).message;
    expect(message).toMatch(new RegExp(`do not load in this Electron \\(ABI ${OTHER_ABI}\\)`));
    expect(message).toMatch(new RegExp(`better_sqlite3\\.node was built for ABI ${NODE_ABI}`));
    expect(message).toMatch(/npm ci/);
  });

  it('refuses when the modules are missing', () => {
    const check = electronNative(tempHome('povdesk-app-'), String(OTHER_ABI));
    expect(check.ok).toBe(false);
    expect((check as { message: string }).message).toMatch(/cannot be read \(ENOENT\)/);
  });

  it('the database opens through the nativeBinding path the check hands over', () => {
    const check = electronNative(ROOT);
    if (!check.ok) throw new Error(check.message);
    const db = openDatabase(join(tempHome(), 'n.db'), undefined, check.native.sqliteBinding);
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    db.close();
    // …and that path is what is loaded: a wrong one fails instead of falling back to node_modules.
    expect(() => openDatabase(join(tempHome(), 'm.db'), undefined, '/nowhere/better_sqlite3.node')).toThrow();
  });
});
