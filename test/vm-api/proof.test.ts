import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VmManagerClient } from '../../main/vm-api/client';
import { CORE_TOOLS, parseDuration, PROOF_VM_PREFIX, runProof } from '../../main/vm-api/proof';
import { runVmManagerCli } from '../../main/vm-manager/cli';
import { needs } from '../support/system';
import { tempDir } from '../support/temp-dirs';
import { attestingGuest, startFakeDaemon, type FakeDaemon } from '../vm-manager/fake-launcher';
import { TEST_IMAGE } from '../../main/vm-manager/images';

/**
 * `povdesk vm-manager test` (the proof) against the real daemon's REST and MCP handlers with the
 * fake launcher in place of QEMU (the guest's first contact, quote and READY played through the
 * VM service's real bookkeeping), so every check runs, passes and fails here without a boot; and
 * once through the CLI against a daemon it starts itself on this host, with --skip-vm. The real
 * boot is `povdesk vm-manager test` by hand (docs/vm-manager-proof.md, "The proof").
 */
const skip = needs(['qemu-system-x86_64', 'swtpm']);
const TOKEN = 'proof-token-0123456789abcdef';

describe.skipIf(skip)('the proof against the daemon handlers (fake launcher)', () => {
  let d: FakeDaemon;
  let url = '';

  beforeAll(async () => {
    d = await startFakeDaemon(tempDir('vmm-proof-'), TOKEN);
    url = d.url;
  }, 60_000);
  afterAll(() => d?.close());

  it('removes its own leftovers first, passes every check, prints the durations and leaves no VM', async () => {
    const client = new VmManagerClient(url, TOKEN);
    const old = await client.create({ name: `${PROOF_VM_PREFIX}old`, image: TEST_IMAGE, wait_for: 'none' });
    const keep = await client.create({ name: 'someone-elses', image: TEST_IMAGE, wait_for: 'none' });
    const lines: string[] = [];
    const r = await runProof({ url, token: TOKEN, out: (l) => lines.push(l), pollMs: 50 });
    expect(
      r.checks.filter((c) => c.result === 'fail'),
      lines.join('\n'),
    ).toEqual([]);
    expect(r.ok).toBe(true);
    expect(lines[0]).toBe(`ok   leftovers: removed ${PROOF_VM_PREFIX}old (${old.id}) from an earlier run`);
    expect(r.checks.map((c) => c.name)).toEqual([
      'leftovers',
      'identity',
      'host',
      'mcp tools',
      'mcp instructions',
      'mcp get_host',
      'mcp lists',
      'vm create',
      'vm ready',
      'vm attestation',
      'vm console',
      'vm delete',
    ]);
    expect(lines.find((l) => l.startsWith('ok   mcp tools'))).toContain(`the core ${CORE_TOOLS.length} among them`);
    expect(lines.find((l) => l.startsWith('ok   mcp lists'))).toMatch(/without golden PCR values: povdesk-test; list_networks: .*default/);
    expect(lines.find((l) => l.startsWith('ok   vm create'))).toMatch(
      /1 CPU, 1024 MiB, without attestation: the image has no golden PCR values yet/,
    );
    expect(r.durations).toEqual({ installSeconds: null, bootSeconds: expect.any(Number) });
    expect(r.durations!.bootSeconds).toBeGreaterThanOrEqual(0);
    const names = (await client.list()).map((v) => v.name);
    expect(names).toEqual(['someone-elses']);
    await client.delete(keep.id);
  }, 60_000);

  it("a failed boot fails the proof with the VM's lastError and console tail, and the VM is still deleted", async () => {
    d.launcher.failNextStart = 'qemu';
    const lines: string[] = [];
    const r = await runProof({ url, token: TOKEN, out: (l) => lines.push(l), pollMs: 50 });
    expect(r.ok).toBe(false);
    const ready = r.checks.find((c) => c.name === 'vm ready' || c.name === 'vm create')!;
    expect(ready.result).toBe('fail');
    expect(ready.detail).toMatch(/qemu/i);
    expect((await new VmManagerClient(url, TOKEN).list()).filter((v) => v.name.startsWith(PROOF_VM_PREFIX))).toEqual([]);
  }, 60_000);

  it('a VM that never reaches ready within --vm-timeout fails naming its state; the VM is deleted', async () => {
    d.launcher.onStart = () => {}; // the guest never talks
    try {
      const lines: string[] = [];
      const r = await runProof({ url, token: TOKEN, out: (l) => lines.push(l), pollMs: 50, vmTimeoutMs: 1000 });
      const ready = r.checks.find((c) => c.name === 'vm ready')!;
      expect(ready.result).toBe('fail');
      expect(ready.detail).toMatch(/(not ready after 1 s|failed: )/);
      expect(ready.detail).toContain('--- console (last lines) ---');
      expect((await new VmManagerClient(url, TOKEN).list()).filter((v) => v.name.startsWith(PROOF_VM_PREFIX))).toEqual([]);
    } finally {
      d.launcher.onStart = attestingGuest(d.vms);
    }
  }, 60_000);

  it('a vm-manager that answers without the token fails the identity check; a wrong token stops the proof there', async () => {
    // A proxy that adds the token to every request: the manager now answers anonymous callers.
    const open = createServer((req, res) => {
      const up = request(`${url}${req.url}`, { method: req.method, headers: { ...req.headers, authorization: `Bearer ${TOKEN}` } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => open.listen(0, '127.0.0.1', () => r()));
    try {
      const lines: string[] = [];
      const r = await runProof({
        url: `http://127.0.0.1:${(open.address() as AddressInfo).port}`,
        token: TOKEN,
        skipVm: true,
        out: (l) => lines.push(l),
      });
      expect(r.checks.find((c) => c.name === 'identity')).toMatchObject({
        result: 'fail',
        detail: expect.stringMatching(/answered 200, not 401: this vm-manager answers anonymously/),
      });
    } finally {
      open.closeAllConnections();
      await new Promise<void>((r) => open.close(() => r()));
    }
    const wrong: string[] = [];
    const r = await runProof({ url, token: 'not-the-token-0123456789', out: (l) => wrong.push(l) });
    expect(r.ok).toBe(false);
    expect(r.checks.map((c) => [c.name, c.result])).toEqual([['leftovers', 'fail']]);
  }, 60_000);

  it('the CLI: --server with POVDESK_VMM_TOKEN and --skip-vm passes; bad options are refused with exit 2', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runVmManagerCli(
      ['test', '--server', url, '--skip-vm'],
      (s) => out.push(s),
      (s) => err.push(s),
      { POVDESK_VMM_TOKEN: TOKEN },
    );
    expect(code, out.concat(err).join('\n')).toBe(0);
    expect(out).toContain('skip vm: --skip-vm');
    expect(out.at(-1)).toBe('proof passed (7 checks)');

    const bad: string[] = [];
    expect(
      await runVmManagerCli(
        ['test', '--server', url, '--vm-timeout', 'soon'],
        () => {},
        (s) => bad.push(s),
        { POVDESK_VMM_TOKEN: TOKEN },
      ),
    ).toBe(2);
    expect(bad.join('\n')).toMatch(/not a duration: "soon"/);
    expect(
      await runVmManagerCli(
        ['test', '--server', url],
        () => {},
        (s) => bad.push(s),
        {},
      ),
    ).toBe(2);
    expect(bad.at(-1)).toMatch(/--server needs its token/);
  }, 60_000);
});

describe('--vm-timeout', () => {
  it('takes 6m, 90s, 1500ms or bare seconds, and refuses the rest', () => {
    expect(parseDuration('6m')).toBe(360_000);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1500ms')).toBe(1500);
    expect(parseDuration('45')).toBe(45_000);
    for (const bad of ['', '6 minutes', '-1m', '10ms', '48h']) expect(() => parseDuration(bad), bad).toThrow();
  });
});

describe.skipIf(skip)('povdesk vm-manager test on this host (a daemon it starts itself)', () => {
  it('--skip-vm: starts a vm-manager on the state dir, proves it, and stops it', async () => {
    const dir = tempDir('vmm-proof-cli-');
    const out: string[] = [];
    const err: string[] = [];
    const code = await runVmManagerCli(
      ['test', '--skip-vm', '--state-dir', dir],
      (s) => out.push(s),
      (s) => err.push(s),
      {},
    );
    expect(code, out.concat(err).join('\n')).toBe(0);
    expect(out[0]).toMatch(/^proving a vm-manager started for this run at http:\/\/127\.0\.0\.1:\d+ \(.*; stopped at the end\)$/);
    expect(out).toContainEqual(expect.stringMatching(/^ok {3}host: ready: /));
    expect(out.at(-1)).toBe('proof passed (7 checks)');
  }, 60_000);
});
