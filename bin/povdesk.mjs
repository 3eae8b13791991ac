#!/usr/bin/env node
// Runs the built CLI when present (npm run build), else the TypeScript sources through tsx, on the
// Node the app runs on (Electron's major, scripts/node-runtime.mjs): from another Node it starts
// itself again under that one, fetched from the npm registry the first time.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureNode, NODE_MAJOR, runtimeEnv } from '../scripts/node-runtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (Number(process.versions.node.split('.')[0]) !== NODE_MAJOR) {
  let rt;
  try {
    rt = ensureNode(root);
  } catch (e) {
    process.stderr.write(`povdesk: ${e.message}\n`);
    process.exit(1);
  }
  const r = spawnSync(rt.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: runtimeEnv(rt) });
  process.exit(r.status ?? 1);
}
const built = join(root, 'out', 'main', 'cli.js');
if (existsSync(built) && !process.env.POVDESK_FROM_SOURCE) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'main', 'cli', 'main.ts')).href);
}
