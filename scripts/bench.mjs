// Runs every test/bench/*.ts (or the names given) one after another, each within a time budget,
// and prints their figures. Benchmarks report ratios against a baseline measured in the same run.
// A bench learns its budget from POVDESK_BENCH_BUDGET_MS (to size its runs); one that passes it may
// run on for a grace period so the runner can say by how much it exceeded, then it is stopped
// (its whole process group: browsers, VMs) and the runner says so.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const dir = process.env.BENCH_DIR ?? join(root, 'test', 'bench');
const only = process.argv.slice(2);
const budgetMs = Number(process.env.BENCH_TIMEOUT_MS ?? 300_000);
const graceMs = Number(process.env.BENCH_GRACE_MS ?? budgetMs / 2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('_'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const secs = (ms) => (ms / 1000).toFixed(1);

/** Runs one bench file; resolves how it ended and how long it took. */
function runOne(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', join(dir, file)], {
      cwd: root,
      stdio: 'inherit',
      detached: true, // its own process group, so a stop reaches what it started
      // tsx reads ./tsconfig.json, whose `"files": []` (a solution of references) matches no file, so
      // it would compile JSX with the classic runtime ("React is not defined"): give it the options.
      env: {
        TSX_TSCONFIG_PATH: join(root, 'tsconfig.base.json'),
        ...process.env,
        POVDESK_BENCH: '1',
        POVDESK_BENCH_BUDGET_MS: String(budgetMs),
      },
    });
    let killed = false;
    const stop = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        /* already gone */
      }
    };
    const hard = setTimeout(() => {
      killed = true;
      stop('SIGTERM');
      setTimeout(() => stop('SIGKILL'), 10_000).unref();
    }, budgetMs + graceMs);
    // Its own process group does not get the terminal's Ctrl-C: pass it on, then stop.
    const interrupted = (signal) => {
      stop('SIGTERM');
      process.exit(signal === 'SIGINT' ? 130 : 143);
    };
    process.once('SIGINT', interrupted);
    process.once('SIGTERM', interrupted);
    child.on('error', (error) => resolve({ error, ms: Date.now() - started }));
    child.on('exit', (code, signal) => {
      clearTimeout(hard);
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
      resolve({ code, signal, killed, ms: Date.now() - started });
    });
  });
}

/** The closing line for one bench: finished, over budget (by how much), stopped, or failed. */
function verdict(file, r) {
  const over = r.ms - budgetMs;
  if (r.error) return { ok: false, line: `bench ${file}: did not start (${r.error.message})` };
  if (r.killed) {
    return {
      ok: false,
      line:
        `bench ${file}: exceeded its ${secs(budgetMs)} s budget by more than ${secs(graceMs)} s and was stopped after ${secs(r.ms)} ` +
        `s; the figures above are the ones it reached`,
    };
  }
  if (r.code !== 0) return { ok: false, line: `bench ${file}: did not complete (exit ${r.code ?? r.signal}) after ${secs(r.ms)} s` };
  if (over > 0)
    return { ok: false, line: `bench ${file}: exceeded its ${secs(budgetMs)} s budget by ${secs(over)} s (done in ${secs(r.ms)} s)` };
  return { ok: true, line: `bench ${file}: done in ${secs(r.ms)} s (budget ${secs(budgetMs)} s)` };
}

let failures = 0;
for (const f of files) {
  console.log(`\n--- bench ${f}`);
  const v = verdict(f, await runOne(f));
  if (!v.ok) failures++;
  console.log(v.line);
}
process.exit(failures ? 1 : 0);
