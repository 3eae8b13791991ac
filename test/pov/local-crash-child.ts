/**
 * A local POV lifecycle job in its own process, for the local crash-injection tests: the real
 * SQLite file, JobRunner and PovService, the Local platform over HTTP to the parent's vm-manager,
 * and a SIGKILL of this process at the named checkpoint:
 *
 *   CRASH_DB=<file> CRASH_VMM=<url> CRASH_OP=create|destroy CRASH_AT=<step> [CRASH_POV=<id>] \
 *     node --import tsx test/pov/local-crash-child.ts
 *
 * Prints "pov <id>" and "job <id>" first so the parent knows what was running.
 */
import { JobRunner } from '../../main/services/jobs/runner';
import { LocalPlatform } from '../../main/services/lab-platforms/local';
import { PovService } from '../../main/services/pov/service';
import { openDatabase } from '../../main/services/store/db';
import { VmManagerClient } from '../../main/vm-api/client';
import { MIGRATIONS } from './helpers';
import { templatesOf, TOKEN, TWO_VMS } from './local-support';

const env = process.env;
const db = openDatabase(env.CRASH_DB!, MIGRATIONS);
const crashAt = env.CRASH_AT ?? '';
const jobs = new JobRunner(db);
const svc = new PovService({
  db,
  jobs,
  skytap: async () => {
    throw new Error('no Skytap in the local crash child');
  },
  local: new LocalPlatform({ api: async () => new VmManagerClient(env.CRASH_VMM!, TOKEN, 20_000), templates: templatesOf(TWO_VMS) }),
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
  const r = svc.create({ platform: 'local', templateId: TWO_VMS.id, name: 'Crash POV' });
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
