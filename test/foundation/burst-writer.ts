// Child process for the crash test: starts jobs as fast as it can on a real core and prints each
// job id once JobRunner.start has returned (the row is committed by then). The parent SIGKILLs it.
import { createCore } from '../../main/core/create';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { JOB_KIND } from '../../shared/contract/job-kinds';

const home = process.argv[2]!;
const core = await createCore({
  home,
  role: 'test',
  env: { POVDESK_HOME: home },
  secrets: new MemorySecretStore({ backend: 'memory', available: false, message: '', remedy: null }),
});
let n = 0;
const tick = () => {
  for (let i = 0; i < 20; i++) {
    const id = core.base.jobs.start({ kind: JOB_KIND.sshTypeInto, title: `burst ${n++}` }, async (job) => {
      job.progress('writing', 0.5, 'half way');
      job.log('a line of log');
      await new Promise((r) => setTimeout(r, 5));
    });
    process.stdout.write(`ack ${id}\n`);
  }
  setImmediate(tick);
};
tick();
