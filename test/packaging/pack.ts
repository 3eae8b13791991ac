/**
 * Packs the built app with the real electron-builder (the `dir` target for Linux x64) into a temp
 * folder, with a stand-in for the Electron binary: no Electron can be downloaded here. The stand-in
 * carries Electron's fuse wire (so electron-builder's fuse flipping runs for real) and, like the
 * real binary under ELECTRON_RUN_AS_NODE=1, runs its script argument with Node; without that
 * variable it refuses, as the real one would open a window instead. Native modules are not rebuilt
 * (that needs Electron's headers from the network), so the packaged tree runs under Node here.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');
/** electron-builder's own dependencies (@electron/asar, @electron/fuses), resolved where it resolves them. */
export const builderRequire = createRequire(createRequire(join(ROOT, 'package.json')).resolve('app-builder-lib/package.json'));
export const FUSE_SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';

/** A directory electron-builder accepts as `electronDist`: an `electron` binary stand-in and nothing else. */
export function fakeElectronDist(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const head = `#!/bin/sh\n# fuse wire: ${FUSE_SENTINEL}`;
  // Fuse wire version 1, nine fuses, all on; then the script that stands in for the binary.
  const body =
    `\n[ "$ELECTRON_RUN_AS_NODE" = 1 ] || { echo "stand-in Electron: started without ELECTRON_RUN_AS_NODE=1 (the real one would ` +
    `open the app)" >&2; exit 9; }\nexec '${process.execPath}' "$@"\n`;
  const file = join(dir, 'electron');
  writeFileSync(file, Buffer.concat([Buffer.from(head), Buffer.from([1, 9]), Buffer.from('111111111'), Buffer.from(body)]));
  chmodSync(file, 0o755);
  return dir;
}

export interface Packed {
  /** <out>/linux-unpacked: the folder an AppImage or deb wraps (the deb puts it in /opt/POV Desk). */
  appDir: string;
  resources: string;
  runtime: string;
  log: string;
}

/** Runs electron-builder on the current build (out/ must exist: `npx electron-vite build`). */
export function packLinuxDir(extraConfig: string[] = []): Packed {
  if (!existsSync(join(ROOT, 'out', 'main', 'cli.js')) || !existsSync(join(ROOT, 'out', 'vm-manager', 'vm-manager.mjs'))) {
    throw new Error('out/ is not built: run `npx electron-vite build` first (npm test does)');
  }
  const work = mkdtempSync(join(tmpdir(), 'povdesk-pack-'));
  const dist = fakeElectronDist(join(work, 'electron-dist'));
  const out = join(work, 'dist');
  const cli = createRequire(join(ROOT, 'package.json')).resolve('electron-builder/cli.js');
  const log = execFileSync(
    process.execPath,
    [
      cli,
      '--linux',
      'dir',
      '--x64',
      '--publish',
      'never',
      `-c.electronDist=${dist}`,
      '-c.npmRebuild=false',
      `-c.directories.output=${out}`,
      ...extraConfig,
    ],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CSC_IDENTITY_AUTO_DISCOVERY: 'false' } },
  );
  const appDir = join(out, 'linux-unpacked');
  return { appDir, resources: join(appDir, 'resources'), runtime: join(appDir, 'povdesk-desktop'), log };
}
