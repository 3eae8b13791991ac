/**
 * A POV lifecycle step run in its own process, for the crash-injection tests. It opens the real
 * SQLite file, talks to the emulator over HTTP, and SIGKILLs itself at the named checkpoint:
 *
 *   CRASH_DB=<file> CRASH_EMU=<url> CRASH_OP=create|destroy CRASH_AT=<step> [CRASH_POV=<id>] \
 *     tsx test/pov/crash-child.ts
 *
 * For create it inserts the row first and prints "pov <id>" so the parent knows it.
 */
import { runCreate, runDestroy } from '../../main/services/pov/lifecycle';
import { insertPov } from '../../main/services/pov/repo';
import { skytapNameFor } from '../../main/services/pov/service';
import { openDatabase } from '../../main/services/store/db';
import { clientFor, MIGRATIONS } from './helpers';

const env = process.env;
const db = openDatabase(env.CRASH_DB!, MIGRATIONS);
const crashAt = env.CRASH_AT ?? '';
const ctx = {
  signal: new AbortController().signal,
  progress: () => {},
  log: (m: string) => process.stderr.write(`${m}\n`),
};
const deps = {
  db,
  skytap: async (signal: AbortSignal) => clientFor(env.CRASH_EMU!, signal),
  pollMs: 15,
  waitTimeoutMs: 10_000,
  checkpoint: (step: string) => {
    if (step === crashAt) {
      process.stdout.write(`crash ${step}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  },
};

if (env.CRASH_OP === 'create') {
  const id = `pov-${process.pid}-${Date.now()}`;
  insertPov(db, { id, name: 'Crash POV', templateId: env.CRASH_TEMPLATE!, templateName: '', skytapName: skytapNameFor('Crash POV', id), at: new Date().toISOString() });
  process.stdout.write(`pov ${id}\n`);
  await runCreate(deps, id, ctx);
} else if (env.CRASH_OP === 'destroy') {
  await runDestroy(deps, env.CRASH_POV!, ctx);
} else {
  throw new Error(`CRASH_OP must be create or destroy, got ${env.CRASH_OP}`);
}
process.stdout.write('finished\n');
db.close();
