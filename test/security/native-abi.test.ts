import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { electronNative } from '../../main/electron/native';
import { openDatabase } from '../../main/services/store/db';
import { abiOf, nativeProblems, NATIVE_MODULES } from '../../scripts/native-abi.mjs';
import { tempHome } from '../foundation/helpers';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const MODULES = join(ROOT, 'node_modules');
const SQLITE = join(MODULES, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']);
const KEYTAR = join(MODULES, 'keytar', NATIVE_MODULES.keytar);

/** A node_modules with the real addons, better-sqlite3's rewritten to claim another ABI. */
function modulesBuiltFor(abi: number): string {
  const dir = join(tempHome('povdesk-native-'), 'node_modules');
  for (const [name, rel] of Object.entries(NATIVE_MODULES)) {
    mkdirSync(join(dir, name, rel, '..'), { recursive: true });
    copyFileSync(join(MODULES, name, rel), join(dir, name, rel));
  }
  const f = join(dir, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']);
  // Same length, so the file stays a valid ELF: only the symbol's digits change.
  writeFileSync(f, Buffer.from(readFileSync(f).toString('latin1').replaceAll('node_register_module_v115', `node_register_module_v${abi}`), 'latin1'));
  return dir;
}

// Item 3 of the security review: the ABI each native module was built for, from its own bytes.
describe('the native module ABI reader', () => {
  it('reads ABI 115 (Node 20, this runtime) from the better-sqlite3 the tests use', () => {
    expect(process.versions.modules).toBe('115');
    expect(abiOf(SQLITE)).toEqual({ kind: 'node', abi: 115 });
  });

  it('reads keytar as a Node-API module, which loads in Node and Electron alike', () => {
    expect(abiOf(KEYTAR)).toEqual({ kind: 'napi', version: 1 });
  });

  it('finds no ABI in a file that is not an addon', () => {
    expect(abiOf(join(ROOT, 'package.json'))).toBeNull();
  });

  it('reports no problem for the Node build here, and each mismatch for another runtime', () => {
    expect(nativeProblems(MODULES, process.versions.modules)).toEqual([]);
    const problems = nativeProblems(MODULES, 139);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^better-sqlite3: .*better_sqlite3\.node was built for ABI 115, this runtime needs ABI 139$/);
  });

  it('accepts a module rebuilt for the runtime and refuses a missing one', () => {
    const dir = modulesBuiltFor(139);
    expect(abiOf(join(dir, 'better-sqlite3', NATIVE_MODULES['better-sqlite3']))).toEqual({ kind: 'node', abi: 139 });
    expect(nativeProblems(dir, 139)).toEqual([]);
    expect(nativeProblems(dir, 115)[0]).toMatch(/built for ABI 139, this runtime needs ABI 115/);
    expect(nativeProblems(join(dir, 'nowhere'), 139)).toHaveLength(2);
  });

  it('the script reports each file and exits 1 with what to do on a mismatch', async () => {
    const ok = await run(process.execPath, [join(ROOT, 'scripts/native-abi.mjs'), '--expect', '115'], { cwd: ROOT });
    expect(ok.stdout).toContain('better_sqlite3.node: ABI 115');
    expect(ok.stdout).toContain('keytar.node: Node-API v1');
    const bad = await run(process.execPath, [join(ROOT, 'scripts/native-abi.mjs'), '--expect', '139'], { cwd: ROOT }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(1);
    expect((bad as { stdout: string }).stdout).toContain('MISMATCH');
    expect((bad as { stderr: string }).stderr).toMatch(/npm start/);
  });
});

describe('the Electron app refuses native modules of another ABI', () => {
  it('starts with the copies built for its ABI, handing createCore their paths', () => {
    const dir = modulesBuiltFor(139);
    const check = electronNative({ POVDESK_NATIVE_DIR: dir }, '/nowhere', '139');
    expect(check).toEqual({
      ok: true,
      native: { sqliteBinding: join(dir, 'better-sqlite3', 'build/Release/better_sqlite3.node'), keytarModule: join(dir, 'keytar') },
    });
  });

  it('refuses the Node build (ABI 115) under Electron 38 (ABI 139) with what to do', () => {
    const check = electronNative({ POVDESK_NATIVE_DIR: MODULES }, '/nowhere', '139');
    expect(check.ok).toBe(false);
    const message = (check as { message: string }).message;
    expect(message).toMatch(/not built for this Electron \(ABI 139\)/);
    expect(message).toMatch(/better_sqlite3\.node was built for ABI 115/);
    expect(message).toMatch(/npm start/);
  });

  it('refuses when npm start has not built them yet (no .electron-native)', () => {
    const check = electronNative({}, tempHome('povdesk-app-'), '139');
    expect(check.ok).toBe(false);
    expect((check as { message: string }).message).toMatch(/\.electron-native.*cannot be read \(ENOENT\)/s);
  });

  it('the Node build here passes the same check for Node (the path the CLI and tests take)', () => {
    expect(electronNative({ POVDESK_NATIVE_DIR: MODULES }, '/nowhere').ok).toBe(true);
  });

  it('the database opens through the nativeBinding path the check hands over', () => {
    const check = electronNative({ POVDESK_NATIVE_DIR: MODULES }, '/nowhere');
    if (!check.ok) throw new Error(check.message);
    const db = openDatabase(join(tempHome(), 'n.db'), undefined, check.native.sqliteBinding);
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    db.close();
    // …and that path is what is loaded: a wrong one fails instead of falling back to node_modules.
    expect(() => openDatabase(join(tempHome(), 'm.db'), undefined, '/nowhere/better_sqlite3.node')).toThrow();
  });
});
