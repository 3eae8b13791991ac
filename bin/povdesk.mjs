#!/usr/bin/env node
// Runs the built CLI when present (npm run build), else the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'out', 'main', 'cli.js');
if (existsSync(built) && !process.env.POVDESK_FROM_SOURCE) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'main', 'cli', 'main.ts')).href);
}
