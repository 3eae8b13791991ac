import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopManager } from '../support/manager';
import { listProcs } from '../../main/lib/procs';
import { TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { BIN, envFor, freshHome } from '../owner/procs';
import { pidsWith, vmSkip } from '../vm-manager/support';

const skip = vmSkip();

/**
 * Issue 17's "done when": an MCP client configured with `povdesk mcp` runs a local POV end to end,
 * the way docs/mcp.md tells an assistant to, from a fresh data directory with nothing configured.
 * The SDK's stdio client spawns the real CLI; the MCP process builds the core, which starts the
 * home's own vm-manager (real QEMU + swtpm + OVMF under TCG). The test image is made through the
 * tools too (`vm_imageBuildTest`: build, then one learn boot for its golden values, which the
 * bundled template's attested VM needs), after a pov_create that fails for want of it. Three boots:
 * the learn boot, the POV's VM, and its cold start after pov_suspend (the vm-manager's stop).
 */
describe.skipIf(skip !== null)('povdesk mcp runs a local POV end to end', () => {
  const home = freshHome();
  // A Skytap token in the server's env that no result may carry (a local POV never needs it).
  const SKYTAP_TOKEN = `mcp-local-secret-${randomBytes(12).toString('hex')}`;
  let client: Client | null = null;
  afterAll(async () => {
    await client?.close().catch(() => {});
    await stopManager(home).catch(() => {});
    rmSync(home, { recursive: true, force: true });
  });

  it(
    'labTemplates_list finds povdesk-test; pov_create → jobs_wait → active and running; console and attestation; suspend/start; ' +
      'pov_destroy → nothing left',
    async () => {
      const times: Record<string, number> = {};
      const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
        const t = Date.now();
        try {
          return await fn();
        } finally {
          times[what] = Date.now() - t;
        }
      };
      client = new Client({ name: 'test', version: '1' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [BIN, 'mcp'],
          env: envFor(home, 'http://127.0.0.1:9', { SKYTAP_API_TOKEN: SKYTAP_TOKEN }) as Record<string, string>,
          stderr: 'pipe',
        }),
      );
      // Every result and progress notification is kept for the byte scan at the end.
      const results: string[] = [];
      const raw = async (name: string, args: Record<string, unknown> = {}, onprogress?: (p: Progress) => void) => {
        const r = (await client!.callTool({ name, arguments: args }, undefined, {
          timeout: 120_000,
          resetTimeoutOnProgress: true,
          onprogress: (p) => (results.push(JSON.stringify(p)), onprogress?.(p)),
        })) as CallToolResult;
        results.push(JSON.stringify(r));
        return r;
      };
      const tool = async (name: string, args: Record<string, unknown> = {}) => {
        const r = await raw(name, args);
        expect(r.isError, `${name}: ${JSON.stringify(r)}`).toBeFalsy();
        return r.structuredContent as Record<string, any>;
      };
      /** jobs_wait until the job finishes (each call answers within its timeoutSeconds), collecting progress. */
      const wait = async (jobId: string, progress: Progress[] = []) => {
        for (;;) {
          const r = await raw('jobs_wait', { id: jobId, timeoutSeconds: 50 }, (p) => progress.push(p));
          expect(r.isError, `jobs_wait ${jobId}: ${JSON.stringify(r)}`).toBeFalsy();
          const b = r.structuredContent as { finished: boolean; job: Record<string, any> };
          if (b.finished) return b.job;
        }
      };

      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of [
        'labTemplates_list',
        'pov_create',
        'jobs_wait',
        'pov_get',
        'pov_destroy',
        'vm_list',
        'vm_console',
        'vm_attestation',
        'vm_imageBuildTest',
      ])
        expect(names).toContain(n);

      // The local platform's templates: the bundled test template first, with its one attested VM.
      const listed = await tool('labTemplates_list', { platform: 'local' });
      expect(listed.platform).toBe('local');
      expect(listed.templates[0]).toMatchObject({ id: TEST_TEMPLATE_ID });
      expect(listed.templates[0].vms).toEqual([
        { name: 'test-vm', os: 'linux', image: TEST_IMAGE, cpus: 2, memoryMib: 2048, diskGib: 20, requireAttestation: true },
      ]);

      // A fresh machine has no test image: a POV made now fails naming it, and is destroyed cleanly.
      expect(await tool('vm_host')).toMatchObject({ mode: 'local', ready: true });
      expect((await tool('vm_images')).images.map((i: { name: string }) => i.name)).not.toContain(TEST_IMAGE);
      const early = await tool('pov_create', { platform: 'local', templateId: TEST_TEMPLATE_ID, name: 'Too early' });
      let failed: CallToolResult;
      do failed = await raw('jobs_wait', { id: early.jobId, timeoutSeconds: 50 });
      while (!(failed.structuredContent as { finished?: boolean }).finished);
      expect(failed.isError).toBe(true);
      expect((failed.structuredContent as any).error.message).toContain(TEST_IMAGE);
      console.log(`pov_create without the test image: ${JSON.stringify((failed.structuredContent as any).error)}`);
      const [tooEarly] = (await tool('pov_list')).povs as { id: string; state: string }[];
      const cleaned = await wait((await tool('pov_destroy', { id: tooEarly!.id })).jobId);
      expect(cleaned, JSON.stringify(cleaned.error)).toMatchObject({ kind: 'pov.destroy', state: 'succeeded' });
      expect((await tool('pov_list')).povs).toEqual([]);

      // So the assistant builds the test image (with its reference measurements, made from the files: no boot).
      const built = await timed('imageBuildTest', async () => wait((await tool('vm_imageBuildTest')).jobId));
      expect(built).toMatchObject({ kind: 'vm.imageBuildTest', state: 'succeeded' });
      const image = (await tool('vm_images')).images.find((i: { name: string }) => i.name === TEST_IMAGE);
      expect(image).toMatchObject({ hasPolicy: true, firmwareChanged: null });
      expect(image.references).toMatch(/from the files: kernel/);

      // pov_create on the local platform, followed with progress until it finishes.
      const progress: Progress[] = [];
      const created = await timed('create', async () => {
        const { jobId } = await tool('pov_create', { platform: 'local', templateId: TEST_TEMPLATE_ID, name: 'Acme rehearsal' });
        expect(jobId).toMatch(/\S/);
        return wait(jobId, progress);
      });
      expect(created, JSON.stringify(created.error)).toMatchObject({ kind: 'pov.create', state: 'succeeded' });
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
      const povId: string = created.subject;
      const got = await tool('pov_get', { id: povId });
      expect(got.pov).toMatchObject({ id: povId, name: 'Acme rehearsal', platform: 'local', state: 'active', runstate: 'running' });
      expect(got.vms.map((v: { name: string; os: string }) => [v.name, v.os])).toEqual([['test-vm', 'linux']]);
      expect((await tool('pov_list')).povs.map((p: { id: string }) => p.id)).toEqual([povId]);

      // The POV's VM through the vm tools: running in this home's manager, its console and attestation.
      const vms = (await tool('vm_list')).vms as { id: string; name: string; state: string; image: string; requireAttestation: boolean }[];
      expect(vms).toHaveLength(1);
      const vm = vms[0]!;
      // pov_create ends at power-on (as on Skytap): the guest may still be booting; vm_get tells when it is ready.
      expect(vm).toMatchObject({
        name: `povdesk-${povId.slice(0, 8)}-test-vm`,
        image: TEST_IMAGE,
        requireAttestation: true,
        state: expect.stringMatching(/^(booting|attesting|running|ready)$/),
      });
      await timed('ready', async () => {
        for (let i = 0; i < 300 && (await tool('vm_get', { id: vm.id })).vm.state !== 'ready'; i++)
          await new Promise((r) => setTimeout(r, 1000));
      });
      expect(got.vms[0].vmId).toBe(vm.id);
      expect(pidsWith(join(home, 'vm-manager')).length).toBeGreaterThanOrEqual(3); // the manager, qemu, swtpm
      const con = await tool('vm_console', { id: vm.id, lines: 200 });
      expect(con.id).toBe(vm.id);
      expect(con.lines.length).toBeGreaterThan(0);
      const att = await tool('vm_attestation', { id: vm.id });
      expect(att).toMatchObject({ id: vm.id, required: true, userDataReleased: true, policyKnown: true });
      expect(att.stages.map((s: { stage: string; verified: boolean }) => [s.stage, s.verified])).toEqual([
        ['initrd', true],
        ['ready', true],
      ]);
      expect((await tool('vm_get', { id: vm.id })).vm).toMatchObject({ id: vm.id, state: 'ready' });

      // Suspend is the vm-manager's stop; start is a cold boot (the one extra boot).
      const suspended = await timed('suspend', async () => wait((await tool('pov_suspend', { id: povId })).jobId));
      expect(suspended, JSON.stringify(suspended.error)).toMatchObject({ kind: 'pov.suspend', state: 'succeeded' });
      expect((await tool('pov_get', { id: povId })).pov.runstate).toBe('stopped');
      expect((await tool('vm_list')).vms.map((v: { state: string }) => v.state)).toEqual(['stopped']);
      const started = await timed('start', async () => wait((await tool('pov_start', { id: povId })).jobId));
      expect(started, JSON.stringify(started.error)).toMatchObject({ kind: 'pov.start', state: 'succeeded' });
      expect((await tool('pov_get', { id: povId })).pov).toMatchObject({ state: 'active', runstate: 'running' });

      // pov_destroy: the POV destroyed, no VM left, no qemu or swtpm of this home left.
      const gone = await timed('destroy', async () => wait((await tool('pov_destroy', { id: povId })).jobId));
      expect(gone, JSON.stringify(gone.error)).toMatchObject({ kind: 'pov.destroy', state: 'succeeded' });
      expect((await tool('pov_get', { id: povId })).pov.state).toBe('destroyed');
      expect((await tool('vm_list')).vms).toEqual([]);
      const marker = join(home, 'vm-manager');
      const left = listProcs().filter((p) => p.argv.join('\0').includes(marker) && /qemu|swtpm/.test(p.argv[0] ?? ''));
      expect(left.map((p) => p.argv.join(' '))).toEqual([]);

      // No result carried a secret: the Skytap token from the env, or the vm-manager's bearer token.
      const managerToken = (JSON.parse(readFileSync(join(home, 'vm-manager', 'endpoint.json'), 'utf8')) as { token: string }).token;
      expect(managerToken.length).toBeGreaterThanOrEqual(16);
      const scan = (all: string[]) => {
        const text = all.join('\n');
        expect(text.length).toBeGreaterThan(1000);
        for (const secret of [SKYTAP_TOKEN, managerToken]) {
          for (const form of [
            secret,
            Buffer.from(secret).toString('base64'),
            Buffer.from(secret).toString('hex'),
            encodeURIComponent(secret),
          ]) {
            expect(text.includes(form), `a tool result carries a secret (${form.slice(0, 8)}…)`).toBe(false);
          }
        }
      };
      scan(results);
      expect(() => scan([...results, `{"x":"${Buffer.from(managerToken).toString('hex')}"}`])).toThrow(); // the scan can fail
      console.log(
        `local POV over MCP (TCG): ${Object.entries(times)
          .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
          .join(', ')}`,
      );
    },
    1_200_000,
  );
});
