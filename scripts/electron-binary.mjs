// The Electron binary of the installed `electron` package, without side effects. Since Electron 42
// the package no longer downloads its binary in postinstall: `require('electron')` downloads it on
// first use (synchronously, throwing when it cannot), and the package's `install-electron` bin does
// it on request. Code that only asks whether a binary exists (the `_electron` specs, `npm start`
// deciding between Electron and browser mode) reads the package's path.txt here instead, so asking
// never starts a download; `fetchElectron` is the one place that does.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** @returns {{ path: string } | { reason: string }} */
export function electronBinary(root) {
  const pkg = join(root, 'node_modules', 'electron');
  if (!existsSync(join(pkg, 'package.json'))) return { reason: 'the electron package is not installed (run `npm ci`)' };
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile))
    return {
      reason:
        'no Electron binary on this machine: it has not been fetched (`npx install-electron`), and cannot be where its download ' +
        'host is unreachable',
    };
  const dist = process.env.ELECTRON_OVERRIDE_DIST_PATH || join(pkg, 'dist');
  const file = join(dist, readFileSync(pathFile, 'utf8').trim());
  return existsSync(file) ? { path: file } : { reason: `the Electron binary ${file} is missing: run \`npx install-electron\`` };
}

/**
 * Fetches the binary the new way (the package's `install-electron` bin, i.e. its install.js), once.
 * `run(cmd, args, opts)` is spawnSync-like. Returns the binary, or why there is none.
 * @returns {{ path: string } | { reason: string }}
 */
export function fetchElectron(root, run, timeoutMs = 180_000) {
  const pkgDir = join(root, 'node_modules', 'electron');
  const have = electronBinary(root);
  if ('path' in have || !existsSync(join(pkgDir, 'package.json'))) return have;
  const bin = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).bin?.['install-electron'] ?? 'install.js';
  const r = run(process.execPath, [join(pkgDir, bin)], { timeout: timeoutMs });
  const after = electronBinary(root);
  if ('path' in after) return after;
  return { reason: `the Electron binary could not be downloaded (install-electron exited ${r.status ?? r.signal ?? r.error?.message})` };
}
