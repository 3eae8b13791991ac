// The reconcile sweep's read: listEnvironments over 2,000 environments against the emulator with
// a fixed per-page latency. Figures: requests made (must equal ceil(2000/100) = 20) and the
// client's wall time over the time the emulator spent answering those pages, its fixed latency
// included (measured in the same run; target ≤ 1.1: the client adds at most 10% to waiting for
// Skytap). The client walks pages one after another on purpose: parallel pages would score
// better here but multiply the request rate an account is rate-limited on.
import { SkytapClient } from '../../main/services/skytap/client';
import { SEEDS, startEmulator } from '../skytap-emulator';

const ENVIRONMENTS = 2000;
const LATENCY_MS = Number(process.env.SKYTAP_BENCH_LATENCY_MS ?? 50);
const RUNS = 5;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const emu = await startEmulator({ pageLatencyMs: LATENCY_MS, seed: (s) => SEEDS.many(s, ENVIRONMENTS) });
const client = new SkytapClient({ baseUrl: emu.url, username: 'demo', token: 'demo-token' });
const ratios: number[] = [];
const walls: number[] = [];
let requests = 0;
let failed = false;
try {
  // One untimed sweep first: the real sweep runs every ten minutes in a warm process, so the
  // figure is the steady state (connection open, zod and JSON paths compiled), not the JIT.
  await client.listEnvironments();
  for (let run = 0; run < RUNS; run++) {
    emu.requests.length = 0;
    const t0 = performance.now();
    const envs = await client.listEnvironments();
    const wall = performance.now() - t0;
    const pages = emu.requests.filter((r) => r.method === 'GET' && r.path === '/v2/configurations');
    requests = pages.length;
    const served = pages.reduce((sum, r) => sum + r.ms, 0);
    if (envs.length !== ENVIRONMENTS || new Set(envs.map((e) => e.id)).size !== ENVIRONMENTS) {
      console.log(`bench skytap-sweep: read ${envs.length} environments, expected ${ENVIRONMENTS} distinct`);
      failed = true;
    }
    walls.push(wall);
    ratios.push(wall / served);
  }
} finally {
  await emu.close();
}
const expected = Math.ceil(ENVIRONMENTS / 100);
console.log(`bench skytap-sweep-requests: ${requests} requests [expected ${expected}]`);
const ratio = median(ratios);
console.log(
  `bench skytap-sweep-wall: ${median(walls).toFixed(0)} ms [ratio ${ratio.toFixed(3)} vs the emulator's time answering the pages ` +
    `(${expected} × ${LATENCY_MS} ms latency + its own work) target 1.1]`,
);
if (requests !== expected) failed = true;
if (ratio > 1.1) console.log(`bench skytap-sweep: ratio ${ratio.toFixed(3)} is over the 1.1 target`);
process.exit(failed ? 1 : 0);
