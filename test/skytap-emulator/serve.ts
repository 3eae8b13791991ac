/**
 * Runs the Skytap emulator standalone, for manual testing and the e2e tests:
 *   npx tsx test/skytap-emulator/serve.ts --port 8123 --seed demo [--user demo --token demo-token]
 *     [--create-busy-ms 1500 --runstate-busy-ms 1500 --delete-ms 1500 --page-latency-ms 0]
 * Prints one line "skytap-emulator listening <url>" when ready; stops on SIGINT/SIGTERM.
 * Faults and the request log: POST/DELETE /__emulator/faults, GET/DELETE /__emulator/requests,
 * GET /__emulator/state, POST /__emulator/stay-busy {id}, POST /__emulator/timing {...},
 * POST /__emulator/reset {seed} (state, faults and log back to a seed). Over HTTP a fault's
 * match is a string and times may be "Infinity".
 */
import { parseArgs } from 'node:util';
import { startEmulator } from './emulator';
import { applySeed } from './seed';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    seed: { type: 'string', default: 'demo' },
    user: { type: 'string', default: 'demo' },
    token: { type: 'string', default: 'demo-token' },
    'create-busy-ms': { type: 'string', default: '1500' },
    'runstate-busy-ms': { type: 'string', default: '1500' },
    'delete-ms': { type: 'string', default: '1500' },
    'rate-limited-ms': { type: 'string', default: '3000' },
    'page-latency-ms': { type: 'string', default: '0' },
  },
  strict: true,
});

function int(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}

const emu = await startEmulator({
  port: int('port', values.port),
  credentials: { username: values.user!, token: values.token! },
  timing: {
    createBusyMs: int('create-busy-ms', values['create-busy-ms']),
    runstateBusyMs: int('runstate-busy-ms', values['runstate-busy-ms']),
    deleteMs: int('delete-ms', values['delete-ms']),
    rateLimitedMs: int('rate-limited-ms', values['rate-limited-ms']),
  },
  pageLatencyMs: int('page-latency-ms', values['page-latency-ms']),
  seed: (state) => {
    try {
      applySeed(state, values.seed!);
    } catch (err) {
      console.error(String(err instanceof Error ? err.message : err));
      process.exit(2);
    }
  },
});
console.log(`skytap-emulator listening ${emu.url}`);
const stop = (): void => {
  void emu.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
