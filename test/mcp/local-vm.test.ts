import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopManager } from '../support/manager';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { BIN, envFor, freshHome } from '../owner/procs';
import { cachedImageDir, vmSkip } from '../vm-manager/support';

const skip = vmSkip();

/**
 * A rehearsal VM driven by an assistant through `povdesk mcp`: the MCP process runs the core, which
 * starts the local vm-manager (real QEMU + swtpm + OVMF under TCG) and boots the cached test image.
 * One boot.
 */
describe.skipIf(skip !== null)('povdesk mcp drives a local VM', () => {
  const home = freshHome();
  let client: Client | null = null;
  afterAll(async () => {
    await client?.close().catch(() => {});
    await stopManager(home).catch(() => {});
    rmSync(home, { recursive: true, force: true });
  });

  it('host, images, create (a job), console, attestation, delete', async () => {
    cpSync(cachedImageDir(), join(home, 'vm-manager', 'images', TEST_IMAGE), { recursive: true });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp'],
        env: envFor(home, 'http://127.0.0.1:9') as Record<string, string>,
        stderr: 'pipe',
      }),
    );
    const tool = async (name: string, args: Record<string, unknown> = {}) => {
      const r = (await client!.callTool({ name, arguments: args }, undefined, { timeout: 600_000 })) as CallToolResult;
      expect(r.isError, `${name}: ${JSON.stringify(r)}`).toBeFalsy();
      return r.structuredContent as Record<string, any>;
    };
    expect(await tool('vm_host')).toMatchObject({ mode: 'local', ready: true });
    expect((await tool('vm_images')).images.map((i: { name: string }) => i.name)).toContain(TEST_IMAGE);
    const { jobId } = await tool('vm_create', {
      name: 'mcp-local',
      image: TEST_IMAGE,
      cpus: 1,
      memoryMib: 512,
      diskGib: 2,
      requireAttestation: false,
      waitFor: 'ready',
    });
    let waited = await tool('jobs_wait', { id: jobId, timeoutSeconds: 300 });
    while (!waited.finished) waited = await tool('jobs_wait', { id: jobId, timeoutSeconds: 300 });
    expect(waited.job).toMatchObject({ kind: expect.stringMatching(/vm/), state: 'succeeded' });
    const [vm] = (await tool('vm_list')).vms as { id: string; name: string; state: string }[];
    expect(vm).toMatchObject({ name: 'mcp-local', state: 'ready' });
    const con = await tool('vm_console', { id: vm!.id, lines: 50 });
    expect(con.lines.length).toBeGreaterThan(0);
    expect(await tool('vm_attestation', { id: vm!.id })).toMatchObject({ id: vm!.id });
    expect(await tool('vm_delete', { id: vm!.id })).toEqual({ ok: true });
    expect((await tool('vm_list')).vms).toEqual([]);
  }, 900_000);
});
