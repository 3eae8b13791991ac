'use strict';
// Started by the `povdesk` launchers as `<app binary> povdesk-cli.cjs <args>` with
// ELECTRON_RUN_AS_NODE=1: finds the app's bundled CLI (<resources>/cli, outside the asar) and runs
// it. process.argv is then [runtime, this file, ...args], the shape the CLI reads (argv.slice(2)).
const { existsSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { pathToFileURL } = require('node:url');

/** Where the CLI can be: in this app's resources, or in a mounted AppImage's ($APPDIR). */
function candidates(env, resources) {
  const out = [join(resources, 'cli', 'povdesk-cli.mjs')];
  if (env.APPDIR) out.push(join(env.APPDIR, 'resources', 'cli', 'povdesk-cli.mjs'));
  return out;
}

function main() {
  if (process.env.ELECTRON_RUN_AS_NODE !== '1') {
    process.stderr.write('povdesk: run this through the povdesk launcher (it sets ELECTRON_RUN_AS_NODE=1)\n');
    process.exit(2);
  }
  const tried = candidates(process.env, join(__dirname, '..'));
  const cli = tried.find((p) => existsSync(p));
  if (!cli) {
    process.stderr.write(`povdesk: the app's CLI is missing (looked in ${tried.join(', ')}); reinstall POV Desk\n`);
    process.exit(127);
  }
  // The app's resources folder for the CLI: the packaged daemon is there (managerCommand), and
  // `serve` reads the renderer from the app (files only, through Electron's asar support).
  const resources = join(dirname(cli), '..');
  process.env.POVDESK_RESOURCES_DIR ??= resources;
  if (!process.env.POVDESK_RENDERER_DIR && existsSync(join(resources, 'app.asar', 'out', 'renderer', 'index.html'))) {
    process.env.POVDESK_RENDERER_DIR = join(resources, 'app.asar', 'out', 'renderer');
  }
  import(pathToFileURL(cli).href).catch((e) => {
    process.stderr.write(`povdesk: cannot start the CLI from ${cli}: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  });
}

if (require.main === module) main();
module.exports = { candidates };
