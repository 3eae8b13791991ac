/**
 * A POV lifecycle job run in its own process, for the crash-injection tests. It opens the real
 * SQLite file, runs the job through the real JobRunner and PovService against the emulator over
 * HTTP, and SIGKILLs itself at the named checkpoint:
 *
 *   CRASH_DB=<file> CRASH_EMU=<url> CRASH_OP=create|destroy CRASH_AT=<step> \
 *     [CRASH_TEMPLATE=<id>] [CRASH_POV=<id>] node --import tsx test/pov/crash-child.ts
 *
 * Prints "pov <id>" and "job <id>" first so the parent knows what was running.
 */
import { JobRunner } from '../../main/services/jobs/runner';
import { PovService } from '../../main/services/pov/service';
import { openDatabase } from '../../main/services/store/db';
import { clientFor, MIGRATIONS } from './helpers';

const env = process.env;
const db = openDatabase(env.CRASH_DB!, MIGRATIONS);
const crashAt = env.CRASH_AT ?? '';
const jobs = new JobRunner(db);
const svc = new PovService({
  db,
  jobs,
  skytap: async (signal: AbortSignal) => clientFor(env.CRASH_EMU!, signal),
  pollMs: 15,
  waitTimeoutMs: 10_000,
  checkpoint: (step: string) => {
    if (step === crashAt) {
      process.stdout.write(`crash ${step}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  },
});

let jobId: string;
if (env.CRASH_OP === 'create') {
  const r = svc.create({ templateId: env.CRASH_TEMPLATE!, name: 'Crash POV' });
  jobId = r.jobId;
  process.stdout.write(`pov ${r.povId}\n`);
} else if (env.CRASH_OP === 'destroy') {
  jobId = svc.destroy(env.CRASH_POV!);
  process.stdout.write(`pov ${env.CRASH_POV}\n`);
} else {
  throw new Error(`CRASH_OP must be create or destroy, got ${env.CRASH_OP}`);
}
process.stdout.write(`job ${jobId}\n`);
const rec = await jobs.wait(jobId);
process.stdout.write(`finished ${rec.state}\n`);
db.close();
