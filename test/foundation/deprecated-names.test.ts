/**
 * The previous release's `templates.*` names (shared/contract/deprecated-names.ts): `povdesk call`
 * and the MCP server take them for one release, flagged deprecated in --help and the tool listing;
 * the contract itself has only the new names.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMethodName } from '../../shared/contract';
import { DEPRECATED_METHOD_NAMES } from '../../shared/contract/deprecated-names';
import { helpText } from '../../main/cli/index';
import { createPovdeskMcpServer, povdeskTools, toolName } from '../../main/mcp/server';
import { followLocalJob } from '../../main/mcp/core-backend';
import { testCore, type TestCore } from '../support/core';
import { tempHome } from './helpers';

const run = promisify(execFile);
const BIN = join(__dirname, '..', '..', 'bin', 'povdesk.mjs');
const OLD = Object.entries(DEPRECATED_METHOD_NAMES);

describe('the previous release method names', () => {
  it('are no contract methods; each names one', () => {
    for (const [old, now] of OLD) {
      expect(isMethodName(old), old).toBe(false);
      expect(isMethodName(now), now).toBe(true);
    }
  });

  it('povdesk --help lists each as deprecated, with its new name', () => {
    const text = helpText();
    for (const [old, now] of OLD)
      expect(text).toMatch(
        new RegExp(`\\n  ${old.replace('.', '\\.')}\\s+deprecated: ${old.replace('.', '\\.')} is now ${now.replace('.', '\\.')}`),
      );
  });

  it('povdesk call templates.list answers as labTemplates.list, with a note on stderr', async () => {
    const env = { ...process.env, POVDESK_FROM_SOURCE: '1', POVDESK_HOME: tempHome() };
    const old = await run(process.execPath, [BIN, 'call', 'templates.list', '{"platform":"local"}'], { env });
    const now = await run(process.execPath, [BIN, 'call', 'labTemplates.list', '{"platform":"local"}'], { env });
    expect(JSON.parse(old.stdout)).toEqual(JSON.parse(now.stdout));
    expect(JSON.parse(old.stdout).templates.length).toBeGreaterThan(0);
    expect(old.stderr).toContain('deprecated: templates.list is now labTemplates.list');
    expect(now.stderr).not.toContain('deprecated');
  }, 60_000);

  describe('over MCP', () => {
    let t: TestCore;
    let client: Client;
    beforeAll(async () => {
      t = await testCore();
      const server = createPovdeskMcpServer({
        call: (method, args) => t.core.dispatcher.call(method, args, { transport: 'cli' }),
        follow: (jobId, onJob, stop) => followLocalJob(t.core, jobId, onJob, stop),
      });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await server.connect(a);
      client = new Client({ name: 'test', version: '1' });
      await client.connect(b);
    });
    afterAll(async () => {
      await client?.close();
      await t?.close();
    });

    it("lists each old tool after the new ones, flagged deprecated, with the new one's schema", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((x) => x.name);
      for (const [old, now] of OLD) {
        const oldTool = tools.find((x) => x.name === toolName(old))!;
        const newTool = tools.find((x) => x.name === toolName(now))!;
        expect(oldTool, old).toBeDefined();
        expect(oldTool.description).toMatch(new RegExp(`^deprecated: ${toolName(old)} is now ${toolName(now)}`));
        expect(oldTool.inputSchema).toEqual(newTool.inputSchema);
        expect(names.indexOf(toolName(old))).toBeGreaterThan(names.indexOf(toolName(now)));
      }
      expect(povdeskTools().filter((x) => x.description?.startsWith('deprecated:')).length).toBe(OLD.length);
    });

    it('an old tool name calls the new method', async () => {
      const old = (await client.callTool({ name: 'templates_list', arguments: { platform: 'local' } })) as CallToolResult;
      const now = (await client.callTool({ name: 'labTemplates_list', arguments: { platform: 'local' } })) as CallToolResult;
      expect(old.isError).toBeFalsy();
      expect(old.structuredContent).toEqual(now.structuredContent);
    });
  });
});
