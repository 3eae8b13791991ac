/**
 * A POV lifecycle job run in its own process, for the crash-injection tests of both platforms. It
 * opens the real SQLite file, runs the job through the real JobRunner and PovService (the one
 * lifecycle) against the Skytap emulator or the parent's vm-manager over HTTP, and SIGKILLs itself
 * at the named checkpoint:
 *
 *   CRASH_DB=<file> (CRASH_EMU=<url> [CRASH_TEMPLATE=<id>] | CRASH_VMM=<url>) CRASH_OP=create|destroy \
 *     CRASH_AT=<step> [CRASH_POV=<id>] node --import tsx test/pov/crash-child.ts
 *
 * CRASH_VMM makes it a local POV from the two-VM template (local-support.ts). Prints "pov <id>" and
 * "job <id>" first so the parent knows what was running.
 */
import { StreamHub } from '../../main/core/streams';
import { JobRunner } from '../../main/services/jobs/runner';
import { LocalPlatform } from '../../main/services/lab-platforms/local';
import { PovService } from '../../main/services/pov/service';
import { openDatabase } from '../../main/services/store/db';
import { VmManagerClient } from '../../main/vm-api/client';
import { bareCollaborators, clientFor, MIGRATIONS } from './helpers';
import { templatesOf, TOKEN, TWO_VMS } from './local-support';

const env = process.env;
const db = openDatabase(env.CRASH_DB!, MIGRATIONS);
const crashAt = env.CRASH_AT ?? '';
const local = env.CRASH_VMM
  ? new LocalPlatform({ api: async () => new VmManagerClient(env.CRASH_VMM!, TOKEN, 20_000), templates: templatesOf(TWO_VMS) })
  : undefined;
const jobs = new JobRunner(db);
const svc = new PovService({
  db,
  jobs,
  hub: new StreamHub(),
  ...bareCollaborators(),
  skytap: async (signal: AbortSignal) => {
    if (!env.CRASH_EMU) throw new Error('no Skytap in the local crash child');
    return clientFor(env.CRASH_EMU, signal);
  },
  ...(local ? { local } : {}),
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
  const r = local
    ? svc.create({ platform: 'local', templateId: TWO_VMS.id, name: 'Crash POV' })
    : svc.create({ templateId: env.CRASH_TEMPLATE!, name: 'Crash POV' });
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
