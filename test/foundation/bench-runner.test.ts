import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const RUNNER = join(__dirname, '..', '..', 'scripts', 'bench.mjs');
const dir = mkdtempSync(join(tmpdir(), 'povdesk-bench-runner-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
writeFileSync(join(dir, 'a-quick.ts'), 'console.log(`bench quick: budget ${process.env.POVDESK_BENCH_BUDGET_MS} ms`);');
writeFileSync(join(dir, 'b-slow.ts'), 'await new Promise((r) => setTimeout(r, 2500));');
writeFileSync(
  join(dir, 'c-hang.ts'),
  `import { spawn } from 'node:child_process';
const child = spawn('sleep', ['300'], { stdio: 'ignore' });
console.log('bench hang: grandchild ' + child.pid);
setInterval(() => {}, 1000);`,
);

function runBenches(): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [RUNNER],
      { env: { ...process.env, BENCH_DIR: dir, BENCH_TIMEOUT_MS: '1500', BENCH_GRACE_MS: '3000' }, timeout: 60_000 },
      (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout }),
    );
  });
}

/** Running, not a zombie waiting for whoever inherited it to reap it. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('scripts/bench.mjs', () => {
  it('tells each bench its budget, says which bench exceeded it and by how much, and stops a hung one with what it started', async () => {
    const { code, out } = await runBenches();
    expect(out).toContain('bench quick: budget 1500 ms');
    expect(out).toMatch(/bench a-quick\.ts: done in [\d.]+ s \(budget 1\.5 s\)/);
    const over = /bench b-slow\.ts: exceeded its 1\.5 s budget by ([\d.]+) s \(done in ([\d.]+) s\)/.exec(out);
    expect(over, out).not.toBeNull();
    expect(Number(over![1])).toBeCloseTo(Number(over![2]) - 1.5, 1);
    expect(out).toMatch(/bench c-hang\.ts: exceeded its 1\.5 s budget by more than 3\.0 s and was stopped after [\d.]+ s/);
    expect(code).toBe(1);
    const grandchild = Number(/grandchild (\d+)/.exec(out)?.[1]);
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(grandchild)).toBe(false);
  }, 60_000);
});
