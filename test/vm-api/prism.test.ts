import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VmManagerClient } from '../../main/vm-api/client';
import { giantswarmDocument, skipUnlessCi, specFolder, startPrism, type Prism } from '../support/prism';
import { StrictDouble } from './double';

/**
 * The vm client checked by a tool we did not write, on giantswarm's own document
 * (../shared/research/giantswarm/openapi.yaml; POVDESK_GIANTSWARM_SPECS names the folder, .ci/run
 * sets it): Stoplight Prism as a validating mock (every request the client sends must validate,
 * and the client must read every answer Prism makes from the document), and as a validating proxy
 * in front of the strict double (the double's answers must validate too). The real daemon's
 * lifecycle behind the same proxy is test/vm-manager/conformance-qemu.test.ts.
 */
const spec = specFolder('POVDESK_GIANTSWARM_SPECS', 'openapi.yaml', '../shared/research/giantswarm');
const skip = skipUnlessCi(spec);
const TOKEN = 'static-token-for-prism';

describe.skipIf(skip !== null)("the vm client against Prism on giantswarm's document", () => {
  it('has the document (under CI=true a missing folder is a failure)', () => {
    expect(spec.missing).toBeNull();
  });

  describe('Prism mock: every request validates, every answer is read', () => {
    let prism: Prism;
    beforeAll(async () => {
      prism = await startPrism('mock', giantswarmDocument(spec.dir));
    }, 90_000);
    afterAll(() => prism?.close());

    it('each client operation: host, images, networks, VMs, lifecycle, exec, forward, console, attestation, metrics, deletes', async () => {
      const c = new VmManagerClient(prism.url, TOKEN, { timeoutMs: 10_000 });
      expect((await c.host()).ready).toEqual(expect.any(Boolean));
      const images = await c.images();
      expect(Array.isArray(images)).toBe(true);
      await c.image('giantswarm-vm-base');
      await c.networks();
      await c.network('default');
      await c.createNetwork({ name: 'lab', cidr: '10.20.0.0/24' });
      await c.deleteNetwork('lab');
      await c.list();
      const vm = await c.create({ name: 'one', wait_for: 'none', cpus: 1, memory_mib: 512, disk_gib: 1, require_attestation: false });
      expect(vm.id).toEqual(expect.any(String));
      await c.get(vm.id);
      await c.start(vm.id);
      await c.stop(vm.id);
      await c.reboot(vm.id);
      expect(await c.exec(vm.id, ['echo', 'hello'])).toMatchObject({ exitCode: expect.any(Number) });
      expect((await c.forward(vm.id, 8080)).address).toEqual(expect.any(String));
      expect((await c.console(vm.id, 50)).console).toEqual(expect.any(String));
      await c.attestation(vm.id);
      await c.metrics(vm.id);
      await c.delete(vm.id);
      expect(await prism.violations()).toEqual([]);
    }, 60_000);

    it('the check can fail: a request outside the document is refused and logged', async () => {
      const r = await fetch(`${prism.url}/api/v1/vms/x/forward`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ port: 'eighty' }),
      });
      expect(r.status).toBe(400); // Prism answers with the operation's documented 400
      expect((await prism.violations()).join('\n')).toMatch(/request\.body\.port .*must be integer/);
    });
  });

  describe('Prism proxy in front of the strict double: requests and answers both validate', () => {
    let prism: Prism;
    let double: StrictDouble;
    beforeAll(async () => {
      double = await new StrictDouble({ tokenOk: (t) => t === TOKEN, stepMs: 30 }).start();
      prism = await startPrism('proxy', giantswarmDocument(spec.dir), double.url);
    }, 90_000);
    afterAll(async () => {
      await prism?.close();
      await double?.close();
    });

    it('a lifecycle through the proxy: create → ready → exec → forward → console → attestation → metrics → delete', async () => {
      const c = new VmManagerClient(prism.url, TOKEN, { timeoutMs: 10_000 });
      await c.host();
      await c.images();
      await c.networks();
      const vm = await c.create({ name: 'proxied', wait_for: 'ready' });
      expect(vm.state).toBe('ready');
      expect((await c.exec(vm.id, ['echo', 'hi'])).stdout).toBe('hi\n');
      expect((await c.forward(vm.id, 8080)).address).toMatch(/^127\.0\.0\.1:/);
      await c.console(vm.id, 20);
      await c.attestation(vm.id);
      await c.metrics(vm.id);
      await c.delete(vm.id);
      expect(await c.list()).toEqual([]);
      expect(double.seen.filter((s) => s.startsWith('unknown'))).toEqual([]);
      expect(await prism.violations()).toEqual([]);
    }, 60_000);

    it('the check can fail: an answer outside the document is a violation', async () => {
      const liar = createServer(
        (_req, res) => void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify([{ id: 5, state: 'asleep' }])),
      );
      await new Promise<void>((r) => liar.listen(0, '127.0.0.1', () => r()));
      const p = await startPrism('proxy', giantswarmDocument(spec.dir), `http://127.0.0.1:${(liar.address() as { port: number }).port}`);
      try {
        const r = await fetch(`${p.url}/api/v1/vms`, { headers: { Authorization: `Bearer ${TOKEN}` } });
        const problem = (await r.json()) as { type: string; validation: { location: string[]; message: string }[] };
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(problem.type).toMatch(/VIOLATIONS/);
        expect(problem.validation.map((v) => v.location.join('.'))).toEqual(
          expect.arrayContaining([expect.stringMatching(/^response\.body/)]),
        );
        expect((await p.violations()).join('\n')).toMatch(/VIOLATIONS/);
      } finally {
        await p.close();
        liar.close();
      }
    }, 90_000);
  });
});
