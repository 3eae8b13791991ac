// `npm start`: install if needed, build, then run Electron where it can run, else browser mode
// (the real core served on 127.0.0.1, opened in the default browser).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { prepareElectronNative } from './electron-native.mjs';

const root = join(import.meta.dirname, '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

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
// keytar is an optional dependency: when its native build fails (no libsecret headers, no
// prebuilt binary reachable) npm ci still succeeds and the app keeps secrets in memory.
if (!existsSync(join(root, 'node_modules'))) {
  if (run(npm, ['ci', '--no-audit', '--no-fund'], { env: { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' } }).status !== 0) process.exit(1);
}
if (run(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build']).status !== 0) process.exit(1);

const hasDisplay = process.platform !== 'linux' || !!(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);

function electronPath() {
  try {
    const p = createRequire(join(root, 'package.json'))('electron');
    return typeof p === 'string' && existsSync(p) ? p : null;
  } catch {
    return null;
  }
}

let electron = null;
let why = '';
if (process.env.POVDESK_BROWSER_MODE) why = 'POVDESK_BROWSER_MODE is set';
else if (!hasDisplay) why = 'no display (DISPLAY/WAYLAND_DISPLAY unset)';
else {
  electron = electronPath();
  if (!electron) {
    // npm's allowScripts keeps electron's download step off during install; try it once here.
    console.log('Fetching the Electron binary (one time)…');
    run(process.execPath, [join(root, 'node_modules/electron/install.js')], { timeout: 120_000 });
    electron = electronPath();
    if (!electron) why = 'the Electron binary could not be downloaded';
  }
}

// better-sqlite3 and keytar rebuilt for Electron's ABI in .electron-native/, beside the Node build
// the CLI and tests use (scripts/electron-native.mjs); if that fails, browser mode runs the Node build.
let nativeDir = null;
if (electron) {
  const native = prepareElectronNative(root, run);
  if (native.ok) nativeDir = native.modulesDir;
  else [electron, why] = [null, `the native modules could not be built for Electron: ${native.why}`];
}

if (electron) {
  const env = { ...process.env, POVDESK_NATIVE_DIR: nativeDir };
  const child = spawn(electron, [join(root, 'out/main/index.js')], { cwd: root, stdio: 'inherit', env });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  console.log(`Starting browser mode: ${why}.`);
  const child = spawn(process.execPath, [join(root, 'out/main/cli.js'), 'serve', '--open'], { cwd: root, stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
