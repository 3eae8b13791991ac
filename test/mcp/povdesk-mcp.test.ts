import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { methods } from '../../shared/contract';
import { methodHints } from '../../shared/contract/annotations';
import { ownerFiles, readOwnerInfo, tryAcquireOwnerLock } from '../../main/core/owner';
import { povdeskTools } from '../../main/mcp/server';
import { startEmulator, SEEDS, type Emulator } from '../skytap-emulator';
import { BIN, envFor, freshHome as newHome, povdesk, run, type Proc } from '../owner/procs';
import { stopManager } from '../support/manager';

/**
 * `povdesk mcp` as an assistant meets it: the SDK's client spawns the real CLI (TypeScript through
 * tsx, as bin/povdesk.mjs runs it) on stdio, against the Skytap emulator over loopback.
 */
let emu: Emulator;
const procs: Proc[] = [];
const clients: Client[] = [];
const homes: string[] = [];
/** A fresh data directory, whose local vm-manager (the app and serve start one) is stopped after the test. */
const freshHome = () => {
  const h = newHome();
  homes.push(h);
  return h;
};
// A token no result may ever carry, in any encoding.
const TOKEN = `mcp-secret-${randomBytes(12).toString('hex')}`;

beforeEach(async () => {
  emu = await startEmulator({
    seed: SEEDS.demo,
    credentials: { username: 'demo', token: TOKEN },
    timing: { createBusyMs: 200, runstateBusyMs: 200, deleteMs: 200 },
  });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const h of homes.splice(0)) await stopManager(h);
  await emu.close();
});

async function connect(env: NodeJS.ProcessEnv): Promise<{ client: Client; results: string[] }> {
  const client = new Client({ name: 'test', version: '1' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    env: env as Record<string, string>,
    stderr: 'pipe',
  });
  await client.connect(transport);
  clients.push(client);
  const results: string[] = [];
  const call = client.callTool.bind(client);
  // Every result the server sends is kept for the byte scan at the end.
  client.callTool = (async (...a: Parameters<typeof call>) => {
    const r = await call(...a);
    results.push(JSON.stringify(r));
    return r;
  }) as typeof call;
  return { client, results };
}

const body = (r: unknown) => (r as CallToolResult).structuredContent as Record<string, any>;
const templateId = () => [...emu.state.templates.keys()][0]!;

function expectNoSecret(results: string[]) {
  const text = results.join('\n');
  expect(text.length).toBeGreaterThan(1000);
  for (const form of [TOKEN, Buffer.from(TOKEN).toString('base64'), Buffer.from(TOKEN).toString('hex'), encodeURIComponent(TOKEN)]) {
    expect(text.includes(form), `a tool result carries the token (${form.slice(0, 12)}…)`).toBe(false);
  }
}

describe('povdesk mcp (stdio)', () => {
  it('lists one tool per exposed method with a valid schema, runs a POV end to end, and never returns the token', async () => {
    const home = freshHome();
    const env = envFor(home, emu.url, { SKYTAP_API_TOKEN: TOKEN });
    const { client, results } = await connect(env);

    const { tools } = await client.listTools();
    const byName = new Map<string, Tool>(tools.map((t) => [t.name, t]));
    const ajv = new Ajv2020({ strict: false });
    for (const [name, def] of Object.entries(methods)) {
      const hints = methodHints[name as keyof typeof methods];
      const tool = byName.get(name.replace(/\./g, '_'));
      if ('notOverMcp' in hints) {
        expect(tool, `${name} takes a secret and must not be offered`).toBeUndefined();
        continue;
      }
      expect(tool, `no tool for ${name}`).toBeDefined();
      expect(tool!.description).toContain(def.summary);
      expect(tool!.inputSchema.type).toBe('object');
      expect(() => ajv.compile(tool!.inputSchema), `${name}'s input schema`).not.toThrow();
      expect(tool!.annotations).toMatchObject({
        readOnlyHint: hints.readOnly,
        destructiveHint: hints.destructive,
        idempotentHint: hints.idempotent,
      });
    }
    expect(byName.get('pov_destroy')!.annotations!.destructiveHint).toBe(true);
    expect(byName.get('pov_list')!.annotations!.readOnlyHint).toBe(true);
    expect(byName.has('jobs_wait')).toBe(true);
    expect(byName.has('settings_saveSkytap')).toBe(false);

    const settings = body(await client.callTool({ name: 'settings_get', arguments: {} }));
    expect(settings.skytap).toMatchObject({ tokenSet: true, username: 'demo' });
    expect(body(await client.callTool({ name: 'pov_list', arguments: {} })).povs).toEqual([]);

    // A job: create a POV, wait on it with progress notifications, then destroy it. Skytap's answer
    // to the create is held until the first wait has answered, so that wait is shorter than the job
    // however slow this machine is (a 2.5 s delay was not, on a loaded 2-core box).
    let release = () => {};
    emu.faults.push({ match: 'POST /configurations', holdUntil: new Promise<void>((r) => (release = r)) });
    const created = body(await client.callTool({ name: 'pov_create', arguments: { templateId: templateId(), name: 'Acme' } }));
    expect(created.jobId).toMatch(/\S/);
    // A wait shorter than the job answers with the job as it is; the next wait picks it up again.
    expect(body(await client.callTool({ name: 'jobs_wait', arguments: { id: created.jobId, timeoutSeconds: 1 } }))).toMatchObject({
      finished: false,
      job: { id: created.jobId, state: expect.stringMatching(/queued|running/) },
    });
    const progress: Progress[] = [];
    const wait = client.callTool({ name: 'jobs_wait', arguments: { id: created.jobId } }, undefined, {
      onprogress: (p) => (progress.push(p), results.push(JSON.stringify(p))),
      resetTimeoutOnProgress: true,
    });
    release();
    const waited = (await wait) as CallToolResult;
    expect(waited.isError, JSON.stringify(waited)).toBeFalsy();
    expect(body(waited)).toMatchObject({ finished: true, job: { kind: 'pov.create', state: 'succeeded' } });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    expect(progress.some((p) => /\[running\]/.test(p.message ?? ''))).toBe(true);

    const [pov] = body(await client.callTool({ name: 'pov_list', arguments: {} })).povs;
    expect(pov).toMatchObject({ name: 'Acme' });
    const destroy = body(await client.callTool({ name: 'pov_destroy', arguments: { id: pov.id } }));
    const gone = body(await client.callTool({ name: 'jobs_wait', arguments: { id: destroy.jobId, timeoutSeconds: 120 } }));
    expect(gone).toMatchObject({ finished: true, job: { kind: 'pov.destroy', state: 'succeeded' } });
    await client.callTool({ name: 'jobs_get', arguments: { id: destroy.jobId } });
    await client.callTool({ name: 'app_diagnostics', arguments: {} });
    await client.callTool({ name: 'skytap_testConnection', arguments: {} });

    // A method that takes a secret is refused by name too.
    const refused = (await client.callTool({ name: 'settings_saveSkytap', arguments: { username: 'x', apiToken: 'y' } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(body(refused).error.code).toBe('forbidden');

    // Idle again: the MCP process gave the lock back so the app could start.
    const lock = tryAcquireOwnerLock(home, 'test');
    expect(lock).not.toBeNull();
    lock!.release();
    expectNoSecret(results);
    expect(() => expectNoSecret([...results, `{"x":"${Buffer.from(TOKEN).toString('base64')}"}`])).toThrow(); // the scan can fail
  }, 180_000);

  it('a malformed argument is the invalid_request `povdesk call` prints; unknown job: not_found; failed job: a tool error', async () => {
    const env = envFor(freshHome(), emu.url);
    const { client } = await connect(env);
    // Calls at once in a directory nobody owns: one core is built, none fails.
    const together = (await Promise.all(
      ['app_info', 'pov_list', 'jobs_list', 'settings_get'].map((name) => client.callTool({ name, arguments: {} })),
    )) as CallToolResult[];
    expect(together.map((r) => r.isError ?? false)).toEqual([false, false, false, false]);
    const bad = (await client.callTool({ name: 'jobs_get', arguments: { id: 5 } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    const cli = await run(['call', 'jobs.get', '{"id":5}'], env);
    expect(cli.code).toBe(1);
    expect(body(bad)).toEqual(JSON.parse(cli.err.trim().split('\n').pop()!));
    expect(body(bad).error.code).toBe('invalid_request');

    const extra = (await client.callTool({ name: 'pov_list', arguments: { includeDestroyed: true, more: 1 } })) as CallToolResult;
    expect(body(extra).error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('more') });
    const unknown = (await client.callTool({ name: 'jobs_wait', arguments: { id: 'nope' } })) as CallToolResult;
    expect(body(unknown).error.code).toBe('not_found');

    // A job that fails (this env's token is wrong) is a tool error with the job's own error.
    const started = body(await client.callTool({ name: 'pov_create', arguments: { templateId: templateId(), name: 'Denied' } }));
    const failed = (await client.callTool({ name: 'jobs_wait', arguments: { id: started.jobId } })) as CallToolResult;
    expect(failed.isError).toBe(true);
    expect(body(failed)).toMatchObject({
      error: { code: 'unauthorized', message: expect.stringMatching(/API security token/) },
      finished: true,
      job: { state: 'failed' },
    });
  }, 120_000);

  it('beside povdesk serve the calls and the job run in serve; the MCP process never takes the lock', async () => {
    const home = freshHome();
    const env = envFor(home, emu.url, { SKYTAP_API_TOKEN: TOKEN });
    const serve = povdesk(['serve', '--port', '0'], env);
    procs.push(serve);
    await serve.waitFor(/serving http/);
    const { client } = await connect(env);
    const info = body(await client.callTool({ name: 'app_info', arguments: {} }));
    expect(info.home).toBe(home);
    // The create's answer is held until the short wait has answered (see the first test).
    let release = () => {};
    emu.faults.push({ match: 'POST /configurations', holdUntil: new Promise<void>((r) => (release = r)) });
    const started = body(await client.callTool({ name: 'pov_create', arguments: { templateId: templateId(), name: 'Via owner' } }));
    expect(body(await client.callTool({ name: 'jobs_wait', arguments: { id: started.jobId, timeoutSeconds: 1 } }))).toMatchObject({
      finished: false,
    });
    const progress: Progress[] = [];
    const wait = client.callTool({ name: 'jobs_wait', arguments: { id: started.jobId } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    release();
    const waited = body(await wait);
    expect(waited).toMatchObject({ finished: true, job: { kind: 'pov.create', state: 'succeeded' } });
    expect(progress.length).toBeGreaterThan(0);
    expect(existsSync(join(home, 'logs', 'mcp.log'))).toBe(false); // no core was built in the MCP process
    expect(tryAcquireOwnerLock(home, 'test')).toBeNull();
    expect(emu.count('POST /configurations')).toBe(1);
  }, 180_000);

  it("povdesk serve answers the same tools over streamable HTTP at owner.json's mcpUrl, with mcp.token", async () => {
    const home = freshHome();
    const env = envFor(home, emu.url, { SKYTAP_API_TOKEN: TOKEN });
    const serve = povdesk(['serve', '--port', '0'], env);
    procs.push(serve);
    await serve.waitFor(/serving http/);
    const url = readOwnerInfo(home)?.mcpUrl;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token']) {
      const res = await fetch(url!, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...(auth ? { Authorization: auth } : {}),
        },
        body: JSON.stringify(init),
      });
      expect(res.status).toBe(401);
    }
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url!), {
        requestInit: { headers: { Authorization: `Bearer ${readFileSync(ownerFiles(home).mcpToken, 'utf8').trim()}` } },
      }),
    );
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(povdeskTools().map((t) => t.name));
    const results: string[] = [];
    const started = body(await client.callTool({ name: 'pov_create', arguments: { templateId: templateId(), name: 'Over HTTP' } }));
    const waited = await client.callTool({ name: 'jobs_wait', arguments: { id: started.jobId } });
    results.push(JSON.stringify(waited), JSON.stringify(await client.callTool({ name: 'settings_get', arguments: {} })));
    expect(body(waited)).toMatchObject({ finished: true, job: { kind: 'pov.create', state: 'succeeded' } });
    expect(body(await client.callTool({ name: 'pov_list', arguments: {} })).povs.map((p: { name: string }) => p.name)).toEqual([
      'Over HTTP',
    ]);
    const bad = (await client.callTool({ name: 'jobs_get', arguments: { id: 5 } })) as CallToolResult;
    expect(body(bad).error.code).toBe('invalid_request');
    expectNoSecret(results);
  }, 180_000);
});
