/**
 * Issue 33 item 5. The owner's MCP endpoint over loopback HTTP checks Host and Origin as the
 * browser-mode host does (DNS rebinding; the MCP specification asks servers to validate Origin).
 * What an assistant may do: the POV Gateway's image and run flags and saving golden values are not
 * offered over MCP; vm.exec and ssh.typeInto are annotated destructive. Through the real endpoint
 * with the SDK's client.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore, type Core } from '../../main/core/create';
import { ownerFiles, readOwnerInfo } from '../../main/core/owner';
import { MemorySecretStore } from '../../main/services/secrets/store';
import { tempDir } from '../support/temp-dirs';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
};

describe('the owner MCP endpoint: Host, Origin, and what it offers', () => {
  let core: Core;
  let url: URL;
  let token = '';
  let client: Client;

  beforeAll(async () => {
    const home = tempDir('mcp-exposure-');
    core = await createCore({
      home,
      env: { POVDESK_HOME: home },
      role: 'app',
      secrets: new MemorySecretStore({ backend: 'memory', available: false, message: 't', remedy: null }),
    });
    url = new URL(readOwnerInfo(home)!.mcpUrl!);
    // mcp.token since item 4; owner.token before it
    const files = ownerFiles(home) as { mcpToken?: string; token: string };
    token = readFileSync(files.mcpToken ?? files.token, 'utf8').trim();
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await core?.close();
  });

  /** An initialize POST with this Host and Origin (node:http, which lets the test set Host). */
  const post = (host: string, origin?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const body = JSON.stringify(INIT);
      const req = request(
        {
          host: '127.0.0.1',
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            Host: host,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            Authorization: `Bearer ${token}`,
            ...(origin ? { Origin: origin } : {}),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('answers only its own Host, and an Origin only when it is its own', async () => {
    const own = `127.0.0.1:${url.port}`;
    expect((await post(own)).status).toBe(200); // an assistant's client sends no Origin
    expect((await post(own, `http://${own}`)).status).toBe(200);
    for (const host of [`evil.test:${url.port}`, `localhost:${url.port}`, `127.0.0.1:${Number(url.port) + 1}`]) {
      const r = await post(host);
      expect(r.status, host).toBe(403);
      expect(JSON.parse(r.body).error.code).toBe('forbidden');
    }
    for (const origin of ['http://evil.test', `http://evil.test:${url.port}`, 'http://localhost:6274', `https://${own}`, 'null']) {
      const r = await post(own, origin);
      expect(r.status, origin).toBe(403);
      expect(JSON.parse(r.body).error.message).toMatch(/Origin .* may not call this endpoint/);
    }
  });

  it('does not offer the Gateway image and flags or saving golden values; refuses them by name', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('pam_getSettings');
    expect(names).not.toContain('pam_saveSettings');
    expect(names).toContain('vm_learnGolden');
    expect(names).not.toContain('vm_saveGolden');
    const image = (await client.callTool({
      name: 'pam_saveSettings',
      arguments: { gatewayImage: 'evil.example/jumpoint:1', gatewayArgs: ['--privileged'] },
    })) as CallToolResult;
    expect(image.isError).toBe(true);
    expect(JSON.parse((image.content[0] as { text: string }).text).error).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('docker run flags'),
    });
    expect((await core.dispatcher.call('pam.getSettings', {}, { transport: 'cli' })) as object).not.toMatchObject({
      gatewayImage: 'evil.example/jumpoint:1',
    });
    const golden = (await client.callTool({
      name: 'vm_saveGolden',
      arguments: { image: 'povdesk-test', golden: {}, firmware: null },
    })) as CallToolResult;
    expect(JSON.parse((golden.content[0] as { text: string }).text).error).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('golden PCR values'),
    });
  });

  it('annotates vm.exec and ssh.typeInto as destructive', async () => {
    const { tools } = await client.listTools();
    for (const name of ['vm_exec', 'ssh_typeInto']) {
      expect(tools.find((t) => t.name === name)?.annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    }
  });
});
