// Adds up the Vitest and Playwright JSON reports and prints the closing line
// "N passed, N failed, N skipped"; exits 1 when any test or step failed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, ...failedSteps] = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
for (const name of ['vitest.json', 'keyring.json']) {
  const f = join(dir, name);
  if (!existsSync(f)) {
    console.log(`${name}: no report (the run did not finish)`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(f, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
}
const pw = join(dir, 'playwright.json');
if (existsSync(pw)) {
  const s = JSON.parse(readFileSync(pw, 'utf8')).stats;
  passed += s.expected + s.flaky;
  failed += s.unexpected;
  skipped += s.skipped;
} else {
  console.log('playwright.json: no report (the run did not finish)');
  failed++;
}
if (failedSteps.length) console.log(`failed steps: ${failedSteps.join(', ')}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || failedSteps.filter((s) => s !== 'bench').length > 0 ? 1 : 0);
