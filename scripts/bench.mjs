// Runs every test/bench/*.ts (or the names given) one after another, each bounded in time, and
// prints their figures. Benchmarks report ratios against a baseline measured in the same run.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const dir = join(root, 'test', 'bench');
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('_'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failures = 0;
for (const f of files) {
  console.log(`\n--- bench ${f}`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, f)], {
    cwd: root,
    stdio: 'inherit',
    timeout: Number(process.env.BENCH_TIMEOUT_MS ?? 300_000),
    env: { ...process.env, POVDESK_BENCH: '1' },
  });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    failures++;
    console.log(`bench ${f}: did not complete (${r.error?.message ?? `exit ${r.status ?? r.signal}`}) after ${secs} s`);
  } else console.log(`bench ${f}: done in ${secs} s`);
}
process.exit(failures ? 1 : 0);
