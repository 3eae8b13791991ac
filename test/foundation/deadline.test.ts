import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { deadline } from '../../main/lib/sleep';
import { followLocalJob } from '../../main/mcp/core-backend';
import { createPovdeskMcpServer } from '../../main/mcp/server';
import { JobRunner } from '../../main/services/jobs/runner';
import { openDatabase } from '../../main/services/store/db';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import { tempHome } from './helpers';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage a few times over `ms`, as a busy process would while a wait runs. */
async function collectFor(ms: number): Promise<void> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('deadline (main/lib/sleep.ts)', () => {
  it('aborts after its time even when nothing but the listener holds it and the heap is collected', async () => {
    let fired = false;
    (() => deadline(200).signal.addEventListener('abort', () => (fired = true)))();
    await collectFor(600);
    expect(fired).toBe(true);
  });

  it('aborts with its source, and a cleared one never aborts', async () => {
    const source = new AbortController();
    const d = deadline(60_000, source.signal);
    source.abort(new Error('cancelled by the client'));
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as Error).message).toBe('cancelled by the client');

    const cleared = deadline(50);
    cleared.clear();
    await new Promise((r) => setTimeout(r, 120));
    expect(cleared.signal.aborted).toBe(false);
  });
});

describe('jobs_wait over MCP', () => {
  it('answers a wait shorter than the job on time, with garbage collected meanwhile (the stall that kept the two lanes off)', async () => {
    const jobs = new JobRunner(openDatabase(join(tempHome(), 'j.db')));
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const id = jobs.start({ kind: JOB_KIND.povRefreshVms, title: 'held' }, async () => held);
    const server = createPovdeskMcpServer({
      call: () => Promise.reject(new Error('not used')),
      follow: (jobId, onJob, stop) => followLocalJob({ base: { jobs } } as never, jobId, onJob, stop),
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(b);
    try {
      const started = Date.now();
      const wait = client.callTool({ name: 'jobs_wait', arguments: { id, timeoutSeconds: 1 } });
      let answeredAfter = 0;
      wait.then(
        () => (answeredAfter = Date.now() - started),
        () => {},
      );
      await collectFor(3000);
      expect(answeredAfter, 'jobs_wait {timeoutSeconds: 1} had not answered after 3 s').toBeGreaterThan(0);
      expect(answeredAfter).toBeLessThan(2500);
      const body = ((await wait) as CallToolResult).structuredContent as { finished: boolean; job: { state: string } };
      expect(body).toMatchObject({ finished: false, job: { state: 'running' } });
    } finally {
      release();
      await jobs.wait(id);
      await client.close();
    }
  });
});
