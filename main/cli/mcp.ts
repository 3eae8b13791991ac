import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Core } from '../core/create';
import { sleep } from '../lib/sleep';
import { FINISHED, followLocalJob } from '../mcp/core-backend';
import { createPovdeskMcpServer, type McpBackend } from '../mcp/server';
import { followOwnerJob, isJobMethod, reachCore } from './call';
import type { OwnerClient } from './owner-client';

/**
 * The backend of `povdesk mcp`, decided per call as `povdesk call` does: through the owner's
 * endpoint when a POV Desk process owns the data directory, else in a core of this process. That
 * core holds the lock only while a call or a job it started runs, so the app can start (and own
 * the directory) whenever the assistant is idle.
 */
export function cliMcpBackend(env: NodeJS.ProcessEnv): McpBackend & { inFlight(): number; close(): Promise<void> } {
  let local: Core | null = null;
  let busy = 0;
  const running = new Set<string>();
  // Reaching a core and giving it back take turns, so two calls at once never both build one and
  // no call reaches the endpoint of a core that is closing.
  let gate: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = gate.then(fn);
    gate = next.catch(() => {});
    return next;
  };
  const closeLocal = async () => {
    const core = local;
    local = null;
    await core?.close();
  };
  const release = () =>
    inTurn(async () => {
      // Last, and only when nothing of ours runs: other calls' jobs and clients in this core (retire.ts).
      if (!local || busy > 0 || running.size > 0 || !local.retirement.tryRetire()) return;
      await closeLocal();
    });
  const adopt = (core: Core) => {
    local = core;
    core.base.jobs.onChange((j) => {
      if (FINISHED.has(j.state)) running.delete(j.id);
    });
    core.retirement.onMaybeIdle(() => void release());
    return core;
  };
  const reach = () =>
    inTurn(async (): Promise<{ client: OwnerClient } | { core: Core }> => {
      if (local) return { core: local };
      const r = await reachCore(env, 'mcp');
      return 'core' in r ? { core: adopt(r.core) } : r;
    });
  /** Runs fn in our own core if we hold one, else through the owner, else in a new core of ours. */
  const withCore = async <T>(viaCore: (core: Core) => Promise<T>, viaOwner: (c: OwnerClient) => Promise<T>): Promise<T> => {
    busy++;
    try {
      const reached = local ? { core: local } : await reach();
      if ('client' in reached) {
        try {
          return await viaOwner(reached.client);
        } finally {
          reached.client.close();
        }
      }
      return await viaCore(reached.core);
    } finally {
      busy--;
      void release();
    }
  };
  return {
    call: (method, args) =>
      withCore(
        async (core) => {
          const result = await core.dispatcher.call(method, args, { transport: 'cli' });
          if (isJobMethod(method)) running.add((result as { jobId: string }).jobId);
          return result;
        },
        (client) => client.call(method, args),
      ),
    follow: (jobId, onJob, stop) =>
      withCore(
        async (core) => followLocalJob(core, jobId, onJob, stop),
        (client) => followOwnerJob(client, jobId, onJob, stop),
      ),
    inFlight: () => busy,
    async close() {
      // Jobs other `povdesk call`s started in our core run to their end first; ours end with the close.
      await local?.retirement.retired(new Set(running));
      running.clear();
      busy = 0;
      await inTurn(closeLocal);
    },
  };
}

/** `povdesk mcp`: the MCP server on stdin/stdout until the client closes it. */
export async function runMcpStdio(env: NodeJS.ProcessEnv): Promise<number> {
  const backend = cliMcpBackend(env);
  const server = createPovdeskMcpServer(backend);
  const transport = new StdioServerTransport();
  const ended = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.connect(transport);
  await ended;
  // Answer the calls already received (a client may send its last request and close stdin at once).
  for (const until = Date.now() + 30_000; backend.inFlight() > 0 && Date.now() < until;) await sleep(50);
  await server.close().catch(() => {});
  // Jobs this process runs are interrupted by the close; the next owner marks them so.
  await backend.close();
  return 0;
}
