// scripts/summarize.mjs, the closing lines of `npm test`: CI shows only the end of the output, so
// the summary must name each failed test and its error, not just count it. Fed with the reports of
// real Vitest and Playwright runs (one passing and one failing test each, no browser), written into
// a folder inside the checkout so both runners resolve their packages from it.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
mkdirSync(join(ROOT, '.cache'), { recursive: true });
const dir = mkdtempSync(join(ROOT, '.cache', 'summarize-'));
const reports = join(dir, 'reports');
mkdirSync(reports);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: dir, env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

it('names every failed Vitest and Playwright test with the first lines of its error, and exits 1', async () => {
  writeFileSync(join(dir, 'vitest.config.mjs'), 'export default { test: { include: ["v/*.test.mjs"] } };');
  mkdirSync(join(dir, 'v'));
  writeFileSync(
    join(dir, 'v', 'a.test.mjs'),
    `import { it, expect } from 'vitest';
it('adds', () => expect(1 + 1).toBe(2));
it('breaks on purpose', () => expect('the reason it broke').toBe('something else'));`,
  );
  mkdirSync(join(dir, 'v2'));
  writeFileSync(
    join(dir, 'v2', 'b.test.mjs'),
    `import { beforeAll, it } from 'vitest';
beforeAll(() => { throw new Error('set-up went wrong'); });
it('never runs', () => {});`,
  );
  // a worker that dies mid-file (as one did when a test's cleanup signalled its own process)
  writeFileSync(
    join(dir, 'v2', 'c.test.mjs'),
    `import { it } from 'vitest';
it('dies with its worker', async () => { process.kill(process.pid, 'SIGKILL'); await new Promise((r) => setTimeout(r, 5000)); });`,
  );
  writeFileSync(join(dir, 'playwright.config.mjs'), 'export default { testDir: "p" };');
  mkdirSync(join(dir, 'p'));
  writeFileSync(
    join(dir, 'p', 'c.spec.mjs'),
    `import { test, expect } from '@playwright/test';
test('holds', () => expect(2).toBe(2));
test('fails in the browser suite', () => expect('seen').toBe('wanted'));`,
  );

  const vitest = await run(bin('vitest'), [
    'run',
    '--config',
    'vitest.config.mjs',
    '--reporter=json',
    `--outputFile=${join(reports, 'vitest.json')}`,
  ]);
  expect(vitest.code, vitest.out).not.toBe(0);
  writeFileSync(join(dir, 'vitest.config.mjs'), 'export default { test: { include: ["v2/*.test.mjs"], pool: "forks" } };');
  const keyring = await run(bin('vitest'), [
    'run',
    '--config',
    'vitest.config.mjs',
    '--reporter=json',
    `--outputFile=${join(reports, 'keyring.json')}`,
  ]);
  expect(keyring.code, keyring.out).not.toBe(0);
  // the system lane's report (scripts/test.sh runs it beside the others): one passing test
  mkdirSync(join(dir, 'v3'));
  writeFileSync(
    join(dir, 'v3', 'd.test.mjs'),
    `import { it, expect } from 'vitest';
it('boots', () => expect(3).toBe(3));`,
  );
  writeFileSync(join(dir, 'vitest.config.mjs'), 'export default { test: { include: ["v3/*.test.mjs"] } };');
  const system = await run(bin('vitest'), [
    'run',
    '--config',
    'vitest.config.mjs',
    '--reporter=json',
    `--outputFile=${join(reports, 'vitest-system.json')}`,
  ]);
  expect(system.code, system.out).toBe(0);
  // lane 2's share of the system project: a report with nothing in it
  writeFileSync(
    join(reports, 'vitest-system2.json'),
    JSON.stringify({ numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, testResults: [] }),
  );
  const pw = await run(bin('playwright'), ['test', '--config', 'playwright.config.mjs', '--reporter=json'], {
    PLAYWRIGHT_JSON_OUTPUT_NAME: join(reports, 'playwright.json'),
  });
  expect(pw.code, pw.out).not.toBe(0);

  const { code, out } = await run(process.execPath, [join(ROOT, 'scripts', 'summarize.mjs'), reports]);
  expect(code).toBe(1);
  expect(out).toMatch(/failed tests:/);
  expect(out).toMatch(/v\/a\.test\.mjs > breaks on purpose\n\s+AssertionError: expected 'the reason it broke' to be 'something else'/);
  expect(out).not.toMatch(/> adds/);
  expect(out).toMatch(/v2\/b\.test\.mjs \(outside its tests\)\n\s+.*set-up went wrong/); // its test is reported skipped
  expect(out).toMatch(/c\.spec\.mjs > fails in the browser suite\n[\s\S]*wanted/);
  // a passing test is named only among the slowest, never among the failures
  expect(out).toMatch(/the slowest test files and end-to-end tests:\n(\s+\d+ s {2}\S.*\n)+failed tests:/);
  expect(out.slice(out.indexOf('failed tests:'))).not.toMatch(/> holds/);
  expect(out).toMatch(/v2\/c\.test\.mjs: 1 test\(s\) did not finish \(the worker exited[^\n]*\n\s+dies with its worker/);
  expect(out).not.toMatch(/> boots/);
  expect(out).toMatch(/^3 passed, 4 failed, 1 skipped$/m);
}, 180_000);

it('counts a step skipped for its reason (no gnome-keyring off Linux) as skipped, not missing; names the Node of each step', async () => {
  const skipDir = join(dir, 'skipped');
  mkdirSync(skipDir);
  const report = (passed: number) => JSON.stringify({ numPassedTests: passed, numFailedTests: 0, numPendingTests: 0, testResults: [] });
  writeFileSync(join(skipDir, 'vitest-system.json'), report(2));
  writeFileSync(join(skipDir, 'vitest.json'), report(5));
  writeFileSync(join(skipDir, 'vitest-system2.json'), report(0));
  // each step's lane and start (epoch seconds), and when each lane ended: the summary gives minutes
  writeFileSync(
    join(skipDir, 'nodes'),
    'typecheck\tv24.22.3 (/x/node)\t1\t1000\nlint: eslint\tv24.22.3 (/x/node)\t3\t1000\nvitest: node\tv24.22.3 ' +
      '(/x/node)\t2\t1060\nsummary\tv24.22.3 (/x/node)\t1\t1400\n',
  );
  writeFileSync(join(skipDir, 'lane-ends'), '1\t1120\n2\t1300\n3\t1030\n');
  const why = 'no dbus-run-session gnome-keyring-daemon on this machine';
  const summary = () => run(process.execPath, [join(ROOT, 'scripts', 'summarize.mjs'), skipDir]);
  // without the skip record, the missing reports are failures
  const missing = await summary();
  expect(missing.code).toBe(1);
  expect(missing.out).toMatch(/keyring\.json: no report/);
  expect(missing.out).toMatch(/^7 passed, 2 failed, 0 skipped$/m);
  writeFileSync(join(skipDir, 'skipped-steps'), `keyring\t${why}\nplaywright\t${why}\n`);
  const { code, out } = await summary();
  expect(code, out).toBe(0);
  expect(out).toContain(`skipped step: keyring (${why})`);
  expect(out).toContain(`skipped step: playwright (${why})`);
  expect(out).toMatch(
    /which Node ran each step, and its minutes:\n {2}typecheck: v24\.22\.3 \(\/x\/node\) \(2\.0 min\)\n {2}lint: eslint: v24\.22\.3 \(\/x\/node\) \(0\.5 min, lane 3\)\n {2}vitest: node: v24\.22\.3 \(\/x\/node\) \(4\.0 min, lane 2\)\n {2}summary: v24\.22\.3 \(\/x\/node\)\n/,
  );
  expect(out).toMatch(/^7 passed, 0 failed, 0 skipped$/m);
});
