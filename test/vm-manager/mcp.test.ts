import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../main/vm-manager/mcp';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { stateWithImage, vmSkip } from './support';

const skip = vmSkip();
const TOKEN = 'mcp-T0K-0123456789';

/** The REST routes of main/vm-manager/api.ts and giantswarm's tool name for each (research/vm-manager.md §1). */
const REST_TO_TOOL: Record<string, string> = {
  'GET /host': 'get_host',
  'GET /images': 'list_images',
  'GET /images/{ref}': 'get_image',
  'POST /images': 'import_image',
  'GET /vms': 'list_vms',
  'POST /vms': 'create_vm',
  'GET /vms/{id}': 'get_vm',
  'DELETE /vms/{id}': 'delete_vm',
  'POST /vms/{id}/start': 'start_vm',
  'POST /vms/{id}/stop': 'stop_vm',
  'POST /vms/{id}/reboot': 'reboot_vm',
  'GET /vms/{id}/console': 'get_vm_console',
  'GET /vms/{id}/attestation': 'get_vm_attestation',
  'GET /vms/{id}/metrics': 'get_vm_metrics',
  'POST /vms/{id}/exec': 'exec_vm',
  'POST /vms/{id}/forward': 'forward_port',
  'GET /networks': 'list_networks',
  'POST /networks': 'create_network',
  'GET /networks/{name}': 'get_network',
  'DELETE /networks/{name}': 'delete_network',
};

describe.skipIf(skip !== null)('vm-manager /mcp (streamable HTTP, SDK client)', () => {
  let m: RunningManager;
  let state: string;
  let client: Client;
  const rest = async (method: string, path: string) => {
    const res = await fetch(`${m.url}/api/v1${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, json: JSON.parse(await res.text()) as unknown };
  };
  const tool = async (name: string, args: Record<string, unknown> = {}, timeout?: number) =>
    (await client.callTool({ name, arguments: args }, undefined, timeout ? { timeout } : undefined)) as CallToolResult;
  const json = (r: CallToolResult) => JSON.parse((r.content[0] as { text: string }).text);

  beforeAll(async () => {
    state = stateWithImage('vmm-mcp-');
    m = await serve({ stateDir: state, token: TOKEN, learn: [TEST_IMAGE] });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${m.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
    );
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await m?.close({ stopVms: true });
    rmSync(state, { recursive: true, force: true });
  });

  it('wants the same bearer token', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    for (const auth of [undefined, 'Bearer nope']) {
      const res = await fetch(`${m.url}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...(auth ? { Authorization: auth } : {}),
        },
        body: JSON.stringify(init),
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
  });

  it('refuses a web page of another origin (the MCP specification asks servers to validate Origin; issue 33 item 5)', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const post = (origin: string) =>
      fetch(`${m.url}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          Authorization: `Bearer ${TOKEN}`,
          Origin: origin,
        },
        body: JSON.stringify(init),
      });
    for (const origin of ['http://evil.test', 'http://localhost:6274', 'null']) {
      const res = await post(origin);
      expect(res.status, origin).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    }
    expect((await post(m.url)).status).toBe(200);
  });

  it('its instructions name the call order: get_host, then list_images and list_networks, then create_vm', () => {
    const text = client.getInstructions() ?? '';
    const at = (tool: string) => text.indexOf(tool);
    for (const tool of ['get_host', 'list_images', 'list_networks', 'create_vm']) expect(at(tool), tool).toBeGreaterThanOrEqual(0);
    expect(at('get_host')).toBeLessThan(at('list_images'));
    expect(at('list_images')).toBeLessThan(at('list_networks'));
    expect(at('list_networks')).toBeLessThan(at('create_vm'));
  });

  it('lists one tool per REST route, with giantswarm names, valid schemas and annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(Object.values(REST_TO_TOOL).sort());
    expect(Object.fromEntries(ROUTES.map((r) => [`${r.verb} ${r.path}`, r.tool]))).toEqual(REST_TO_TOOL);
    const ajv = new Ajv2020({ strict: false });
    for (const t of tools) expect(() => ajv.compile(t.inputSchema), t.name).not.toThrow();
    const by = new Map(tools.map((t) => [t.name, t]));
    expect(by.get('get_host')!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(by.get('delete_vm')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(by.get('create_vm')!.inputSchema.required).toEqual(['name']);
    // Every tool reaches a REST route (a missing one would answer "no route").
    for (const r of ROUTES) {
      const args = {
        ...(r.path.includes('{id}') ? { id: 'abcdef12' } : {}),
        ...(r.path.includes('{ref}') ? { ref: 'nope' } : {}),
        ...(r.path.includes('{name}') ? { name: 'nope' } : {}),
      };
      if (r.verb !== 'GET' && !r.path.includes('{id}')) continue; // creates are exercised below
      const res = await tool(r.tool, args);
      expect(JSON.stringify(res), r.tool).not.toMatch(/no route/);
    }
  });

  it('answers with the REST JSON; errors carry the REST error code', async () => {
    expect(json(await tool('list_images'))).toEqual((await rest('GET', '/images')).json);
    const missing = await tool('get_vm', { id: 'abcdef12' });
    expect(missing.isError).toBe(true);
    expect(json(missing)).toEqual((await rest('GET', '/vms/abcdef12')).json);
    const bad = await tool('create_vm', { name: 'Bad_Name', wait_for: 'none' });
    expect(bad.isError).toBe(true);
    expect(json(bad).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/DNS label/) });
    const traversal = await tool('get_vm', { id: '../host' });
    expect(json(traversal).error.code).toBe('not_found');
  });

  it('creates a VM from the test image, reads its console and attestation, deletes it', async () => {
    const created = await tool('create_vm', { name: 'mcp-vm', require_attestation: true, wait_for: 'ready' }, 600_000);
    expect(created.isError, JSON.stringify(created)).toBeFalsy();
    const vm = created.structuredContent as { id: string; state: string };
    expect(vm.state).toBe('ready');
    expect(json(await tool('get_vm', { id: vm.id }))).toEqual((await rest('GET', `/vms/${vm.id}`)).json);
    const con = json(await tool('get_vm_console', { id: vm.id, lines: 20 }));
    expect(con).toMatchObject({ id: vm.id, lines: expect.any(Number) });
    expect(con.lines).toBeGreaterThan(0);
    expect(con.lines).toBeLessThanOrEqual(20);
    const att = json(await tool('get_vm_attestation', { id: vm.id }));
    expect(att).toMatchObject({ required: true, userDataReleased: true, povdesk: { id: vm.id, stage: 'ready' } });
    expect(att.povdesk.table.length).toBeGreaterThan(0);
    const ran = json(await tool('exec_vm', { id: vm.id, command: ['sh', '-c', 'uname -s; exit 3'] }, 120_000));
    expect(ran).toEqual({ stdout: 'Linux\n', stderr: '', exitCode: 3 });
    expect(json(await tool('get_vm_metrics', { id: vm.id }))).toMatchObject({
      id: vm.id,
      host: { state: 'ready', attestation: 'released' },
      guest: null,
    });
    expect(json(await tool('delete_vm', { id: vm.id }))).toEqual({ id: vm.id, deleted: true });
    expect(json(await tool('list_vms'))).toEqual([]);
  }, 600_000);
});
