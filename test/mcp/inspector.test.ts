import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { BIN, envFor, freshHome } from '../owner/procs';
import { startEmulator, SEEDS, type Emulator } from '../skytap-emulator';
import { stopManager } from '../support/manager';
import { tempDir } from '../support/temp-dirs';

/**
 * MCP driven by a client we did not write: the MCP Inspector's CLI mode
 * (@modelcontextprotocol/inspector-cli, the inspector's `--cli`) lists and calls tools on
 * `povdesk mcp` (it spawns the real CLI on stdio) and on the vm-manager's `/mcp` (streamable HTTP
 * with the bearer token). Its output is the JSON it printed.
 */
const INSPECTOR = join(process.cwd(), 'node_modules/@modelcontextprotocol/inspector-cli/build/index.js');
const exec = promisify(execFile);
/** Run from its own build folder: it looks for its package.json at ../package.json of the working directory. */
const run = (file: string, args: string[], o: { env?: NodeJS.ProcessEnv; timeout: number; maxBuffer?: number }) =>
  exec(file, args, { ...o, cwd: dirname(INSPECTOR) });

async function inspect(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Record<string, any>> {
  const { stdout } = await run(process.execPath, [INSPECTOR, ...args], { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as Record<string, any>;
}

const TOKEN = 'inspector-skytap-token-4f1d9c';

describe('povdesk mcp, driven by the MCP Inspector CLI over stdio', () => {
  let emu: Emulator;
  let home: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    emu = await startEmulator({ seed: SEEDS.demo, credentials: { username: 'demo', token: TOKEN } });
    home = freshHome();
    env = envFor(home, emu.url, { SKYTAP_API_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await stopManager(home);
    await emu.close();
  });

  it(
    "tools/list offers the contract's tools with their hints; tools/call answers settings, the POV list and a not_found, without " +
      'the token',
    async () => {
      const listed = await inspect([process.execPath, BIN, 'mcp', '--method', 'tools/list'], env);
      const byName = new Map((listed.tools as { name: string; annotations?: Record<string, unknown> }[]).map((t) => [t.name, t]));
      expect(byName.get('pov_list')?.annotations).toMatchObject({ readOnlyHint: true });
      expect(byName.get('pov_destroy')?.annotations).toMatchObject({ destructiveHint: true });
      expect(byName.has('settings_saveSkytap')).toBe(false); // takes a secret: never offered
      const settings = await inspect([process.execPath, BIN, 'mcp', '--method', 'tools/call', '--tool-name', 'settings_get'], env);
      expect(settings.isError ?? false).toBe(false);
      expect(settings.structuredContent.skytap).toMatchObject({ tokenSet: true, username: 'demo' });
      const povs = await inspect([process.execPath, BIN, 'mcp', '--method', 'tools/call', '--tool-name', 'pov_list'], env);
      expect(povs.structuredContent.povs).toEqual([]);
      const unknown = await inspect(
        [process.execPath, BIN, 'mcp', '--method', 'tools/call', '--tool-name', 'jobs_get', '--tool-arg', 'id=no-such-job'],
        env,
      );
      expect(unknown).toMatchObject({ isError: true, structuredContent: { error: { code: 'not_found' } } });
      expect(JSON.stringify([listed, settings, povs, unknown])).not.toContain(TOKEN);
    },
    120_000,
  );
});

describe("the vm-manager's /mcp, driven by the MCP Inspector CLI over streamable HTTP", () => {
  let m: RunningManager;
  const MCP_TOKEN = 'inspector-vmm-token-0a7e';
  beforeAll(async () => {
    m = await serve({ stateDir: tempDir('vmm-inspector-'), token: MCP_TOKEN });
  });
  afterAll(() => m?.close({ stopVms: true }));

  const at = () => [`${m.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${MCP_TOKEN}`];

  it("tools/list has giantswarm's tool names; tools/call answers get_host, list_vms, a documented error for a missing image", async () => {
    const listed = await inspect([...at(), '--method', 'tools/list']);
    const names = (listed.tools as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'get_host',
        'list_vms',
        'create_vm',
        'exec_vm',
        'forward_port',
        'get_vm_console',
        'get_vm_attestation',
        'get_vm_metrics',
        'delete_vm',
      ]),
    );
    const host = await inspect([...at(), '--method', 'tools/call', '--tool-name', 'get_host']);
    expect(host.isError ?? false).toBe(false);
    expect(JSON.parse(host.content[0].text)).toMatchObject({ ready: expect.any(Boolean) });
    const vms = await inspect([...at(), '--method', 'tools/call', '--tool-name', 'list_vms']);
    expect(JSON.parse(vms.content[0].text)).toEqual([]);
    const missing = await inspect([...at(), '--method', 'tools/call', '--tool-name', 'get_image', '--tool-arg', 'ref=no-such-image']);
    expect(missing.isError).toBe(true);
    expect(missing.content[0].text).toMatch(/not_found/);
  }, 120_000);

  it('without the bearer token the Inspector is refused', async () => {
    const r = await run(process.execPath, [INSPECTOR, `${m.url}/mcp`, '--transport', 'http', '--method', 'tools/list'], {
      timeout: 60_000,
    }).then(
      () => 'connected',
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    expect(r).toMatch(/401|unauthori[sz]ed|invalid_token/i);
  }, 60_000);
});
