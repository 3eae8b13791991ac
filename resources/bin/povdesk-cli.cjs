'use strict';
// Started by the `povdesk` launchers as `<app binary> povdesk-cli.cjs <args>` with
// ELECTRON_RUN_AS_NODE=1: finds the app's built CLI and runs it. process.argv is then
// [runtime, this file, ...args], the shape the CLI reads (process.argv.slice(2)).
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

/** Where the CLI can be: inside this app (asar or not), or inside a mounted AppImage ($APPDIR). */
function candidates(env, resources) {
  const rel = ['out', 'main', 'cli.js'];
  const out = [join(resources, 'app.asar', ...rel), join(resources, 'app', ...rel)];
  if (env.APPDIR) out.push(join(env.APPDIR, 'resources', 'app.asar', ...rel), join(env.APPDIR, 'resources', 'app', ...rel));
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
  import(pathToFileURL(cli).href).catch((e) => {
    process.stderr.write(`povdesk: cannot start the CLI from ${cli}: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  });
}

if (require.main === module) main();
module.exports = { candidates };
