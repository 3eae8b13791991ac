// Electron's own build of the app's native modules, beside the Node one. better-sqlite3 and keytar
// in node_modules stay built for Node (the CLI, browser mode and the tests use them); `npm start`
// copies the two packages into .electron-native/node_modules and rebuilds the copies there with
// @electron/rebuild for the installed Electron's ABI. Electron's main process loads them from there
// (POVDESK_NATIVE_DIR) and refuses to start if their ABI is not its own (main/electron/native.ts).
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { NATIVE_MODULES, nativeProblems } from './native-abi.mjs';

const version = (root, name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

/** The ABI (NODE_MODULE_VERSION) of an Electron version, from node-abi (a dependency of @electron/rebuild). */
function electronAbi(root, electronVersion) {
  try {
    const req = createRequire(join(root, 'node_modules', '@electron', 'rebuild', 'package.json'));
    return Number(req('node-abi').getAbi(electronVersion, 'electron'));
  } catch {
    return null;
  }
}

/**
 * Makes .electron-native/node_modules hold better-sqlite3 and keytar built for the installed
 * Electron, rebuilding only when the Electron or module versions changed or a file's ABI is wrong.
 * `run(cmd, args, opts)` runs a command (spawnSync-like). Returns the directory to hand Electron
 * as POVDESK_NATIVE_DIR, or why it could not.
 * @returns {{ ok: true, modulesDir: string, rebuilt: boolean } | { ok: false, why: string }}
 */
export function prepareElectronNative(root, run) {
  const dir = join(root, '.electron-native');
  const modulesDir = join(dir, 'node_modules');
  const electronVersion = version(root, 'electron');
  const wanted = { electron: electronVersion, ...Object.fromEntries(Object.keys(NATIVE_MODULES).map((m) => [m, version(root, m)])) };
  const abi = electronAbi(root, electronVersion);
  const stampFile = join(dir, 'stamp.json');
  const stamp = existsSync(stampFile) ? readFileSync(stampFile, 'utf8') : '';
  if (stamp === JSON.stringify(wanted) && abi !== null && nativeProblems(modulesDir, abi).length === 0) return { ok: true, modulesDir, rebuilt: false };

  const cli = join(root, 'node_modules', '@electron', 'rebuild', 'lib', 'cli.js');
  if (!existsSync(cli)) return { ok: false, why: '@electron/rebuild is not installed; run `npm install` in the project folder, then `npm start` again' };
  if (abi === null) return { ok: false, why: `this @electron/rebuild (node-abi) does not know Electron ${electronVersion}'s ABI; update @electron/rebuild` };

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(modulesDir, { recursive: true });
  // Only these two: ssh2's optional cpu-features is not needed (ssh2 runs without it).
  const deps = Object.fromEntries(Object.keys(NATIVE_MODULES).map((m) => [m, wanted[m]]));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'povdesk-electron-native', private: true, dependencies: deps }, null, 2));
  for (const m of Object.keys(NATIVE_MODULES)) {
    cpSync(join(root, 'node_modules', m), join(modulesDir, m), { recursive: true, dereference: true });
  }
  console.log(`Building better-sqlite3 and keytar for Electron ${electronVersion} (ABI ${abi}) in .electron-native/ (one time)…`);
  const r = run(process.execPath, [cli, '--version', electronVersion, '--module-dir', dir, '--only', Object.keys(NATIVE_MODULES).join(','), '--force'], {
    timeout: 15 * 60_000,
  });
  if (r.status !== 0) {
    return {
      ok: false,
      why:
        `@electron/rebuild could not build better-sqlite3 and keytar for Electron ${electronVersion} (exit ${r.status ?? r.signal}; output above). ` +
        'It needs a C++ toolchain (build-essential, python3) and, once, the Electron headers from the network',
    };
  }
  const problems = nativeProblems(modulesDir, abi);
  if (problems.length) return { ok: false, why: `after the rebuild: ${problems.join('; ')}` };
  writeFileSync(stampFile, JSON.stringify(wanted));
  return { ok: true, modulesDir, rebuilt: true };
}
