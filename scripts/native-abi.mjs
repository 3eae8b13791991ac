#!/usr/bin/env node
// Which Node ABI each native module (.node file) was built for, read from the file itself: a
// module built against V8/NAN exports `node_register_module_v<N>` (N = process.versions.modules of
// the runtime it was built for: 137 for Node 24, 150 for Electron 45); a Node-API module exports
// `napi_register_module_v1` and loads in any runtime with Node-API. The symbol name is in the
// file's export/string table on ELF, Mach-O and PE alike, so a byte search finds it.
//
//   node scripts/native-abi.mjs [dir-or-file ...] [--expect N]
//
// With no path it reports the addons better-sqlite3 and keytar load from node_modules. With --expect it exits 1 and
// says what to do when a module was built for another ABI.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The native modules the app loads, each with where its addon can be (the first that exists).
 * Both are Node-API modules: one build loads in Node and in Electron. better-sqlite3 ships
 * prebuilt addons in its package (a local build in build/Release wins); keytar is built by its
 * install script (libsecret). ssh2's optional addons are not built (package.json allowScripts).
 */
export const NATIVE_MODULES = {
  'better-sqlite3': ['build/Release/better_sqlite3.node', `prebuilds/${process.platform}-${process.arch}.node`],
  keytar: ['build/Release/keytar.node'],
};

/** The addon file of a module under modulesDir (a node_modules directory): the first candidate that exists, else the first. */
export function addonFile(modulesDir, name) {
  const files = NATIVE_MODULES[name].map((rel) => join(modulesDir, name, rel));
  return files.find((f) => existsSync(f)) ?? files[0];
}

/** @returns {{ kind: 'node', abi: number } | { kind: 'napi', version: number } | null} */
export function abiOf(file) {
  const bytes = readFileSync(file);
  const node = /node_register_module_v(\d+)/.exec(latin1Around(bytes, 'node_register_module_v'));
  if (node) return { kind: 'node', abi: Number(node[1]) };
  const napi = /napi_register_module_v(\d+)/.exec(latin1Around(bytes, 'napi_register_module_v'));
  if (napi) return { kind: 'napi', version: Number(napi[1]) };
  return null;
}

/** The text around the first occurrence of needle (the whole file would be a large string). */
function latin1Around(bytes, needle) {
  const at = bytes.indexOf(needle, 0, 'latin1');
  return at < 0 ? '' : bytes.toString('latin1', at, Math.min(bytes.length, at + needle.length + 8));
}

/** The .node files a module loads: under build/Release, without node-gyp's obj.target copies. */
export function nodeFiles(path) {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return path.endsWith('.node') ? [path] : [];
  return readdirSync(path).flatMap((name) => (name === 'obj.target' || name === 'node_modules' ? [] : nodeFiles(join(path, name))));
}

/** Whether a module built as `abi` loads in a runtime whose process.versions.modules is `expected`. */
export function loads(abi, expected) {
  return abi !== null && (abi.kind === 'napi' || abi.abi === Number(expected));
}

/**
 * What is wrong with the app's native modules under modulesDir (a node_modules directory) for a
 * runtime of ABI `expected`: one line per addon that is missing, unreadable or built for another
 * ABI; empty when all load.
 */
export function nativeProblems(modulesDir, expected) {
  const problems = [];
  for (const name of Object.keys(NATIVE_MODULES)) {
    const file = addonFile(modulesDir, name);
    let abi;
    try {
      abi = abiOf(file);
    } catch (err) {
      problems.push(`${name}: ${file} cannot be read (${err.code ?? err.message})`);
      continue;
    }
    if (abi === null) problems.push(`${name}: ${file} exports no node_register_module_v<N> or napi_register_module_v<N> symbol`);
    else if (!loads(abi, expected)) problems.push(`${name}: ${file} was built for ABI ${abi.abi}, this runtime needs ABI ${expected}`);
  }
  return problems;
}

function describe(abi) {
  return abi === null
    ? 'not a Node addon (no register symbol)'
    : abi.kind === 'napi'
      ? `Node-API v${abi.version} (any runtime)`
      : `ABI ${abi.abi}`;
}

function main(argv) {
  const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
  const i = argv.indexOf('--expect');
  const expected = i >= 0 ? argv[i + 1] : null;
  if (i >= 0 && !/^\d+$/.test(expected ?? '')) {
    console.error('--expect takes an ABI number (process.versions.modules of the runtime, e.g. 115)');
    return 2;
  }
  const paths = i >= 0 ? [...argv.slice(0, i), ...argv.slice(i + 2)] : argv;
  const files = paths.length
    ? paths.flatMap((p) => nodeFiles(p))
    : Object.keys(NATIVE_MODULES).map((name) => addonFile(join(root, 'node_modules'), name));
  let bad = 0;
  for (const f of files) {
    const abi = existsSync(f) ? abiOf(f) : undefined;
    // A .node file with no register symbol (better-sqlite3's SQLite test extension) is not loaded by Node.
    const ok = expected === null || abi === null || (abi !== undefined && loads(abi, expected));
    if (!ok) bad++;
    const what = abi === undefined ? 'missing' : describe(abi);
    console.log(`${relative(process.cwd(), f) || f}: ${what}${ok ? '' : `  MISMATCH: this runtime needs ABI ${expected}`}`);
  }
  if (files.length === 0) console.log('no .node file found');
  if (bad) {
    console.error(
      `${bad} native module file(s) will not load in a runtime of ABI ${expected}. The app's own are Node-API ` +
        'modules (any runtime): reinstall with `npm ci`; a module built for one ABI must be rebuilt for that runtime.',
    );
    return 1;
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
