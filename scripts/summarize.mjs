// Adds up the Vitest and Playwright JSON reports and prints the closing line
// "N passed, N failed, N skipped"; exits 1 when any test or step failed. Before it, every failed
// test by file and name with the first lines of its error: CI shows only the end of the output.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const [dir, ...failedSteps] = process.argv.slice(2);
/** Lines "<step>\t<text>" that scripts/test.sh wrote into the results folder. */
const lines = (name) =>
  existsSync(join(dir, name))
    ? readFileSync(join(dir, name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t'))
    : [];
/** Steps skipped with their reason (no gnome-keyring/D-Bus off Linux): their reports are not missing. */
const skippedSteps = new Map(lines('skipped-steps'));
/** The slowest test files (Vitest) and tests (Playwright): where the suite's minutes go. */
const durations = [];
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
/** The first lines of an error, without colour codes: enough to know what broke. */
const head = (text) =>
  String(text ?? '')
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((l) => l.trim() && !/^\s*at /.test(l))
    .slice(0, 6)
    .map((l) => `    ${l.slice(0, 300)}`)
    .join('\n');
for (const name of ['vitest-system.json', 'vitest-system2.json', 'vitest.json', 'keyring.json']) {
  const f = join(dir, name);
  if (!existsSync(f) && skippedSteps.has(name.replace(/\.json$/, ''))) continue;
  if (!existsSync(f)) {
    console.log(`${name}: no report (the run did not finish)`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(f, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  for (const file of r.testResults ?? []) {
    const where = relative(process.cwd(), file.name ?? '');
    if (file.endTime > file.startTime) durations.push([file.endTime - file.startTime, where]);
    const failedTests = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failedTests) failures.push(`${where} > ${a.fullName}\n${head(a.failureMessages?.join('\n'))}`);
    // a worker that died (a signal, a crash) leaves its file "passed" with its tests "pending" and
    // in no count: each is a failure
    const unfinished = (file.assertionResults ?? []).filter((a) => a.status === 'pending');
    if (unfinished.length) {
      failures.push(
        `${where}: ${unfinished.length} test(s) did not finish (the worker exited: see "Unhandled Error" ` +
          `above)\n${unfinished.map((a) => `    ${a.fullName}`).join('\n')}`,
      );
      failed += unfinished.length;
    }
    // a file that failed outside its tests (an import, a beforeAll) has no failed test to count:
    // its tests are reported skipped, so the file counts as one failure (Vitest 5 also marks the file
    // of a dead worker failed: counted above)
    if (!failedTests.length && !unfinished.length && file.status === 'failed') {
      failures.push(`${where} (outside its tests)\n${head(file.message)}`);
      failed++;
    }
  }
}
const pw = join(dir, 'playwright.json');
if (existsSync(pw)) {
  const report = JSON.parse(readFileSync(pw, 'utf8'));
  const walk = (suite) => {
    for (const spec of suite.specs ?? []) {
      const ms = spec.tests.reduce((sum, t) => sum + t.results.reduce((a, res) => a + (res.duration ?? 0), 0), 0);
      if (ms > 0) durations.push([ms, `${spec.file} > ${spec.title.slice(0, 80)}`]);
      if (spec.ok) continue;
      const errors = spec.tests.flatMap((t) => t.results.flatMap((res) => res.errors ?? [res.error]).filter(Boolean));
      failures.push(`${spec.file} > ${spec.title}\n${head(errors.map((e) => e.message).join('\n'))}`);
    }
    for (const child of suite.suites ?? []) walk(child);
  };
  for (const suite of report.suites ?? []) walk(suite);
  const s = report.stats;
  passed += s.expected + s.flaky;
  failed += s.unexpected;
  skipped += s.skipped;
} else if (!skippedSteps.has('playwright')) {
  console.log('playwright.json: no report (the run did not finish)');
  failed++;
}
// Each step's minutes: until the next step of its lane, or the lane's end (scripts/test.sh).
const steps = lines('nodes');
const laneEnds = lines('lane-ends');
const minutes = ([, , lane, start]) => {
  const ends = [
    ...steps.filter((s) => s[2] === lane && +s[3] > +start).map((s) => +s[3]),
    ...laneEnds.filter(([l, t]) => l === lane && +t >= +start).map(([, t]) => +t),
  ];
  return ends.length && start ? ` (${((Math.min(...ends) - +start) / 60).toFixed(1)} min${lane === '1' ? '' : `, lane ${lane}`})` : '';
};
if (steps.length)
  console.log(`which Node ran each step, and its minutes:\n${steps.map((s) => `  ${s[0]}: ${s[1]}${minutes(s)}`).join('\n')}`);
durations.sort((a, b) => b[0] - a[0]);
if (durations.length)
  console.log(
    `the slowest test files and end-to-end tests:\n${durations
      .slice(0, 12)
      .map(([ms, where]) => `  ${(ms / 1000).toFixed(0).padStart(5)} s  ${where}`)
      .join('\n')}`,
  );
for (const [step, why] of skippedSteps) console.log(`skipped step: ${step} (${why})`);
if (failures.length) console.log(`failed tests:\n${failures.map((f) => `  ${f}`).join('\n')}`);
if (failedSteps.length) console.log(`failed steps: ${failedSteps.join(', ')}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || failedSteps.length > 0 ? 1 : 0);
