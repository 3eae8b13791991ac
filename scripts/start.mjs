// `npm start`: install if needed, build, then run Electron where it can run, else browser mode
// (the real core served on 127.0.0.1, opened in the default browser). Everything after the system
// packages runs on the Node Electron embeds (scripts/node-runtime.mjs), fetched when the machine's
// Node is another major, so the CLI and the daemon in development run on the app's Node.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { electronBinary, fetchElectron } from './electron-binary.mjs';
import { ensureNode, installIfNeeded, NODE_MAJOR, runtimeEnv } from './node-runtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const fail = (msg) => {
  console.error(`npm start: ${msg}`);
  process.exit(1);
};

// System packages exactly as `npm test` installs them (scripts/system-packages.sh): as root or
// through sudo when we may, else the one command to run. The app starts either way; what is
// missing is reported where it is needed (e.g. no keyring → secrets in memory, with a banner).
if (process.platform === 'linux' && run('sh', ['-c', 'command -v dpkg-query'], { stdio: 'ignore' }).status === 0) {
  const script = join(root, 'scripts/system-packages.sh');
  if (run('bash', [script, '--check'], { stdio: 'ignore' }).status !== 0) {
    const isRoot = process.getuid?.() === 0;
    const sudo = !isRoot && run('sh', ['-c', 'command -v sudo'], { stdio: 'ignore' }).status === 0;
    if (isRoot || sudo) {
      if (run('bash', [script]).status !== 0) console.warn('Some system packages could not be installed; starting anyway.');
    } else {
      run('bash', [script, '--check']); // prints what is missing and the one command to run
      console.warn('Starting without them; run that command as root, then `npm start` again.');
    }
  }
}
// Node 24 (Electron's), and npm ci under it when node_modules is missing or was installed from
// another lockfile or for another Node ABI (as `npm test` does). keytar is an optional dependency:
// when its native build fails (no libsecret headers, no C++ toolchain) npm ci still succeeds and
// the app keeps secrets in memory.
let rt;
try {
  rt = ensureNode(root);
  installIfNeeded(root, rt);
} catch (e) {
  fail(e.message);
}
const env = runtimeEnv(rt);
console.log(`Node: ${env.POVDESK_NODE}`);
const node = (args, opts = {}) => run(rt.execPath, args, { env, ...opts });
if (node([join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build']).status !== 0) process.exit(1);

const hasDisplay = process.platform !== 'linux' || !!(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);

// Since Electron 42 the package downloads no binary at install: fetch it here once (its
// install-electron bin), and fall back to browser mode where its download host is unreachable.
// No native module is rebuilt for Electron: better-sqlite3 and keytar are Node-API modules.
let electron = null;
let why = '';
if (process.env.POVDESK_BROWSER_MODE) why = 'POVDESK_BROWSER_MODE is set';
else if (!hasDisplay) why = 'no display (DISPLAY/WAYLAND_DISPLAY unset)';
else {
  let bin = electronBinary(root);
  if (!('path' in bin)) {
    console.log('Fetching the Electron binary (one time)…');
    bin = fetchElectron(root, (cmd, args, opts) => node(args, opts));
  }
  if ('path' in bin) electron = bin.path;
  else why = bin.reason;
}

if (electron) {
  const child = spawn(electron, [join(root, 'out/main/index.js')], { cwd: root, stdio: 'inherit', env });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  console.log(`Starting browser mode on Node ${NODE_MAJOR} (${rt.execPath}): ${why}.`);
  const child = spawn(rt.execPath, [join(root, 'out/main/cli.js'), 'serve', '--open'], { cwd: root, stdio: 'inherit', env });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
