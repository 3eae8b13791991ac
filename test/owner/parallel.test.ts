import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tryAcquireOwnerLock } from '../../main/core/owner';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import { BIN, envFor, freshHome, povdesk, run, until, emulatorPerTest } from './procs';

/**
 * A workshop script (issue 33, item 9): `povdesk call pov.create … --wait` sixteen times in
 * parallel from a shell loop, no app running. One of them becomes the owner and the others start
 * their jobs in it; before the fix it closed once its own job was done, cutting the others off
 * ("POV Desk (pid N) stopped while job … ran"). Real `povdesk` processes, the Skytap emulator.
 */
const CALLERS = 16;
const w = emulatorPerTest();

describe('parallel povdesk calls with no app running', () => {
  it(`${CALLERS} parallel pov.create --wait: ${CALLERS} successes, ${CALLERS} POSTs, each caller its job, none interrupted`, async () => {
    const home = freshHome();
    const env = envFor(home, w.emu.url);
    const templateId = [...w.emu.state.templates.keys()][0]!;
    // Staggered by the first owner's own create: the owner's job ends while the others' still run.
    const callers = Array.from({ length: CALLERS }, (_, i) =>
      povdesk(['call', 'pov.create', JSON.stringify({ templateId, name: `Workshop ${i}` }), '--wait'], env),
    );
    w.procs.push(...callers);
    const codes = await Promise.all(callers.map((c) => c.exited));
    const outcomes = callers.map((c, i) => ({ i, code: codes[i], err: c.err(), job: parseJob(c.out()) }));
    const failed = outcomes.filter((o) => o.code !== 0 || o.job?.state !== 'succeeded');
    expect(failed.map((o) => `caller ${o.i} (exit ${o.code}): ${o.err.trim().split('\n').slice(-2).join(' | ')}`)).toEqual([]);
    // Each caller got its own job: sixteen different ids, each POV named as that caller asked.
    expect(new Set(outcomes.map((o) => o.job!.id)).size).toBe(CALLERS);
    const povs = JSON.parse((await run(['call', 'pov.list', '{}'], env)).out).povs as { id: string; name: string; state: string }[];
    expect(povs.map((p) => p.name).sort()).toEqual(Array.from({ length: CALLERS }, (_, i) => `Workshop ${i}`).sort());
    for (const o of outcomes) expect(o.job!.title, `caller ${o.i}'s job`).toContain(`"Workshop ${o.i}"`);
    expect(w.emu.count('POST /configurations'), 'POSTs that reached Skytap').toBe(CALLERS);
    expect(w.emu.state.environmentIds()).toHaveLength(CALLERS);
    const jobs = JSON.parse((await run(['call', 'jobs.list', '{}'], env)).out).jobs as { kind: string; state: string }[];
    expect(jobs.filter((j) => j.kind === JOB_KIND.povCreate).map((j) => j.state)).toEqual(Array(CALLERS).fill('succeeded'));
    const logs = readdirSync(join(home, 'logs'))
      .map((f) => readFileSync(join(home, 'logs', f), 'utf8'))
      .join('\n');
    expect(logs).not.toMatch(/marked interrupted/);
  }, 300_000);
});

describe('povdesk mcp as the owner', () => {
  it("a povdesk call's job started in it runs to its end after the MCP process's own job ended", async () => {
    const home = freshHome();
    const env = envFor(home, w.emu.url);
    const templateId = [...w.emu.state.templates.keys()][0]!;
    // The MCP process's create, then the call's, are each held by Skytap until the test lets them go.
    let releaseMcp = () => {};
    let releaseCall = () => {};
    w.emu.faults.push({ match: 'POST /configurations', holdUntil: new Promise<void>((r) => (releaseMcp = r)) });
    w.emu.faults.push({ match: 'POST /configurations', holdUntil: new Promise<void>((r) => (releaseCall = r)) });
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: env as Record<string, string>, stderr: 'pipe' }),
    );
    try {
      const body = (r: unknown) => (r as CallToolResult).structuredContent as { jobId: string; job: { state: string } };
      const own = body(await client.callTool({ name: 'pov_create', arguments: { templateId, name: 'By MCP' } }));
      await until(() => w.emu.count('POST /configurations') === 1, 60_000, "the MCP process's POST");
      const call = povdesk(['call', 'pov.create', JSON.stringify({ templateId, name: 'By call' }), '--wait'], env);
      w.procs.push(call);
      await until(() => w.emu.count('POST /configurations') === 2, 60_000, "the call's POST, from the MCP process's core");
      releaseMcp();
      const waited = body(await client.callTool({ name: 'jobs_wait', arguments: { id: own.jobId, timeoutSeconds: 120 } }));
      expect(waited.job.state).toBe('succeeded');
      // The MCP process's own work is done: before, it let go of the directory here and cut the call's job off.
      await new Promise((r) => setTimeout(r, 1500));
      releaseCall();
      const code = await call.exited;
      expect(code, call.err()).toBe(0);
      expect(parseJob(call.out())?.state).toBe('succeeded');
      expect(call.err()).toMatch(/run by POV Desk \(pid \d+\)/);
      // Idle again, the MCP process gives the lock back.
      await until(
        () => {
          const lock = tryAcquireOwnerLock(home, 'test');
          lock?.release();
          return lock !== null;
        },
        30_000,
        'the MCP process to give the lock back',
      );
    } finally {
      await client.close().catch(() => {});
    }
  }, 180_000);
});

function parseJob(out: string): { id: string; state: string; title: string } | null {
  try {
    return JSON.parse(out);
  } catch {
    return null;
  }
}
