import { AppError, jobRecord, methods, type JobRecord } from '../../shared/contract';
import { deprecationNote, renamedMethod } from '../../shared/contract/deprecated-names';
import { createCore, type Core } from '../core/create';
import { isOwnerBusy } from '../core/owner';
import { defaultHome } from '../core/paths';
import { sleep } from '../lib/sleep';
import { connectOwner, type OwnerClient } from './owner-client';

export interface CallIo {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
}

/** How long a call keeps trying to reach an owner that holds the lock but does not answer yet. */
const REACH_OWNER_MS = 30_000;
const FINISHED = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

export function isJobMethod(method: string): boolean {
  return !!(methods as Record<string, { job?: boolean }>)[method]?.job;
}

/** One line on stderr per change of a job's step or message (percent when known). */
function progressPrinter(io: CallIo): (job: JobRecord) => void {
  let last = '';
  return (job) => {
    const p = job.progress;
    const pct = p.fraction === null ? '' : ` ${Math.round(p.fraction * 100)}%`;
    const line = `[${job.state}] ${p.step || job.kind}${pct}${p.message ? ` — ${p.message}` : ''}`;
    if (line !== last) io.err(line + '\n');
    last = line;
  };
}

function finish(io: CallIo, job: JobRecord, wait: boolean): number {
  if (wait) io.out(JSON.stringify(job, null, 2) + '\n');
  if (job.state === 'succeeded') return 0;
  io.err(JSON.stringify({ error: job.error ?? { code: 'internal', message: `job ended ${job.state}` } }) + '\n');
  return 1;
}

/**
 * Where a call runs: through the owner's endpoint when a POV Desk process owns the data directory,
 * else in a core of this process, which takes the lock (close it to give the lock back).
 */
export async function reachCore(env: NodeJS.ProcessEnv, logName = 'cli'): Promise<{ client: OwnerClient } | { core: Core }> {
  const home = defaultHome(env);
  const deadline = Date.now() + REACH_OWNER_MS;
  for (;;) {
    const client = await connectOwner(home);
    if (client) return { client };
    try {
      return { core: await createCore({ env, role: 'cli', ownerKind: 'cli', logName }) };
    } catch (err) {
      // Someone holds the lock but its endpoint is not up yet (it is starting): ask again.
      if (isOwnerBusy(err) && Date.now() < deadline) {
        await sleep(200);
        continue;
      }
      throw err;
    }
  }
}

/**
 * `povdesk call`: through the owner's endpoint when a POV Desk process owns the data directory
 * (the job then runs there, where the app shows it), else in this process, which takes the lock
 * for as long as it runs.
 */
export async function callMethod(io: CallIo, method: string, args: unknown, wait: boolean): Promise<number> {
  const renamed = renamedMethod(method);
  if (renamed) io.err(`note: ${deprecationNote(method, renamed)}\n`);
  method = renamed ?? method;
  const reached = await reachCore(io.env);
  if ('client' in reached) {
    const { client } = reached;
    try {
      return await viaOwner(io, client, method, args, wait);
    } finally {
      client.close();
    }
  }
  const { core } = reached;
  try {
    const result = await core.dispatcher.call(method, args, { transport: 'cli' });
    const jobId = isJobMethod(method) ? (result as { jobId: string }).jobId : null;
    if (!wait || !jobId) io.out(JSON.stringify(result, null, 2) + '\n');
    if (!jobId) return 0;
    if (!wait)
      io.err('note: no POV Desk app runs this job for you; it runs in this process until it ends (use --wait to print its outcome)\n');
    else {
      const print = progressPrinter(io);
      core.base.jobs.onChange((j) => j.id === jobId && print(j));
    }
    return finish(io, await core.base.jobs.wait(jobId), wait);
  } finally {
    await retire(io, core);
    await core.close();
  }
}

/**
 * Other `povdesk call`s may have found this process as the owner and started jobs here (a script
 * running calls in parallel): it stays until each of them has its outcome, then lets go of the lock.
 */
async function retire(io: CallIo, core: Core): Promise<void> {
  if (core.retirement.tryRetire()) return;
  const others = core.base.jobs.busy().length;
  io.err(
    `note: this process owns the data directory; it stays ` +
      `until ${others ? `the ${others} job(s) other calls started here end and ` : ''}every other call it serves has its answer\n`,
  );
  await core.retirement.retired();
}

async function viaOwner(io: CallIo, client: OwnerClient, method: string, args: unknown, wait: boolean): Promise<number> {
  const overrides = Object.keys(io.env).filter((k) => k.startsWith('SKYTAP_') && io.env[k]);
  if (overrides.length) {
    io.err(`note: ${overrides.join(', ')} of this shell are not used: the call runs in POV Desk (pid ${client.pid}) with its settings\n`);
  }
  const result = await client.call(method, args);
  const jobId = isJobMethod(method) ? (result as { jobId: string }).jobId : null;
  if (!wait || !jobId) {
    io.out(JSON.stringify(result, null, 2) + '\n');
    if (jobId) io.err(`note: the job runs in POV Desk (pid ${client.pid}); follow it with povdesk call jobs.get '{"id":"${jobId}"}'\n`);
    return 0;
  }
  io.err(`following job ${jobId} run by POV Desk (pid ${client.pid})\n`);
  const job = await followOwnerJob(client, jobId, progressPrinter(io));
  return finish(io, job, wait);
}

/**
 * Follows a job the owner runs: every snapshot to `onJob`; resolves with the finished record, or
 * with the latest one when `stop` aborts first (e.g. an MCP client's wait ran out).
 */
export function followOwnerJob(
  client: OwnerClient,
  jobId: string,
  onJob: (job: JobRecord) => void,
  stop?: AbortSignal,
): Promise<JobRecord> {
  return new Promise<JobRecord>((resolve, reject) => {
    let latest: JobRecord | null = null;
    const seen = (raw: unknown) => {
      const j = jobRecord.safeParse(raw);
      if (!j.success) return;
      latest = j.data;
      onJob(j.data);
      if (FINISHED.has(j.data.state)) resolve(j.data);
    };
    client.subscribe('jobs.update', jobId, seen);
    // The job may have moved (or ended) before the subscription: read it once after subscribing.
    client.call('jobs.get', { id: jobId }).then((r) => {
      seen((r as { job: unknown }).job);
      stop?.addEventListener('abort', () => resolve(latest!), { once: true });
      if (stop?.aborted) resolve(latest!);
    }, reject);
    void client.closed.then(() =>
      reject(
        new AppError('unavailable', `POV Desk (pid ${client.pid}) stopped while job ${jobId} ran; its next start shows how the job ended`),
      ),
    );
  });
}
