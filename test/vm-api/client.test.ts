import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VmApiError, VmManagerClient } from '../../main/vm-api/client';
import { ROUTES } from '../../main/vm-api/schemas';
import { giantswarmDocument, specFolder, startPrism, type Prism } from '../support/prism';
import { StrictDouble } from './double';
import { makeTls, opensslSkip } from './support';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOKEN = 'static-token-for-the-double';

/** First line a TCP service at ip:port says. */
function firstLine(address: string): Promise<string> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const s = connect({ host: host!, port: Number(port) });
    s.once('data', (d) => {
      resolve(d.toString().split('\n')[0]!);
      s.destroy();
    });
    s.once('error', reject);
  });
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(20);
  }
}

/**
 * The client against the strict double (only what giantswarm's document says): every call the
 * client makes is a documented operation, its answers validate, and the documented errors arrive
 * with their codes. Run over http, over https with a custom CA bundle, and through Stoplight Prism
 * as a validating proxy on giantswarm's own document (POVDESK_GIANTSWARM_SPECS; without it that
 * variant skips, under CI=true test/vm-api/prism.test.ts fails instead): there the double's answers
 * must all validate, and only the requests this suite makes invalid on purpose may not.
 */
const tlsSkip = opensslSkip();
const spec = specFolder('POVDESK_GIANTSWARM_SPECS', 'openapi.yaml', '../shared/research/giantswarm');
for (const transport of ['http', 'https', 'prism'] as const) {
  describe.skipIf((transport === 'https' && tlsSkip !== null) || (transport === 'prism' && spec.missing !== null))(
    `vm-api client against the strict double (${transport})`,
    () => {
      let double: StrictDouble;
      let c: VmManagerClient;
      let ca: string | undefined;
      let prism: Prism | null = null;
      beforeAll(async () => {
        const tls = transport === 'https' ? makeTls() : null;
        ca = tls?.ca;
        double = await new StrictDouble({
          tokenOk: (t) => t === TOKEN,
          stepMs: 40,
          ...(tls ? { https: { key: tls.key, cert: tls.cert } } : {}),
        }).start();
        prism = transport === 'prism' ? await startPrism('proxy', giantswarmDocument(spec.dir), double.url, { errors: false }) : null;
        c = new VmManagerClient(prism?.url ?? double.url, TOKEN, { timeoutMs: 5000, ...(tls ? { ca: tls.ca } : {}) });
      }, 90_000);
      afterAll(async () => {
        if (prism) {
          const violations = await prism.violations();
          await prism.close();
          // the one request the document refuses is the suite's own forward to port 70000
          expect(violations.map((v) => v.replace(/^.*Violation: /, ''))).toEqual([
            'request.body.port Request body property port must be <= 65535',
          ]);
        }
        await double?.close();
        // nothing outside the document was asked for
        expect(double.seen.filter((s) => s.startsWith('unknown'))).toEqual([]);
      });

      it('host, images, networks, VMs and the document itself', async () => {
        expect((await c.host()).ready).toBe(true);
        expect((await c.images()).map((i) => i.id)).toEqual(['giantswarm-vm-base']);
        expect((await c.image('giantswarm-vm-base')).version).toBe('1.2.0');
        expect((await c.networks()).map((n) => n.spec.name)).toEqual(['default']);
        expect(await c.list()).toEqual([]);
        expect(await c.openapi()).toMatch(/^openapi: 3\.1\.0/);
      });

      it("create with wait_for none answers at once, with the document's defaults; polling follows it to ready", async () => {
        const vm = await c.create({ name: 'one', wait_for: 'none' });
        expect(vm).toMatchObject({
          state: 'creating',
          cpus: 2,
          memoryMiB: 2048,
          diskGiB: 20,
          network: 'default',
          requireAttestation: true,
        });
        const ready = await until(async () => {
          const v = await c.get(vm.id);
          return v.state === 'ready' ? v : null;
        }, 5000);
        expect(ready.attestation).toMatchObject({ userDataReleased: true, initrd: { verified: true } });
        expect(ready.booted).toBe(true);
      });

      it('an unknown field is invalid_request (400) and nothing is made', async () => {
        const e = await c.create({ name: 'two', wait_for: 'none', network_mode: 'nat' } as never).catch((x: unknown) => x);
        expect(e).toBeInstanceOf(VmApiError);
        expect(e).toMatchObject({ code: 'invalid_request', status: 400, message: expect.stringMatching(/network_mode/) });
        expect((await c.list()).map((v) => v.name)).toEqual(['one']);
      });

      it('documented errors arrive with their codes: not_found, conflict, invalid_request on console lines', async () => {
        await expect(c.get('nope')).rejects.toMatchObject({ code: 'not_found', status: 404 });
        const [vm] = await c.list();
        await expect(c.start(vm!.id)).rejects.toMatchObject({ code: 'conflict', status: 409 });
        await expect(c.console(vm!.id, 0)).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
        await expect(c.create({ name: 'bad', image: 'no-such', wait_for: 'none' })).rejects.toMatchObject({
          code: 'invalid_request',
          message: expect.stringContaining('no-such'),
        });
      });

      it('exec: output and exit code; a non-zero exit is a result, not an error', async () => {
        const [vm] = await c.list();
        expect(await c.exec(vm!.id, ['echo', 'hello', 'guest'])).toEqual({ stdout: 'hello guest\n', stderr: '', exitCode: 0 });
        expect((await c.exec(vm!.id, ['false'])).exitCode).toBe(1);
        await expect(c.exec(vm!.id, [])).rejects.toMatchObject({ code: 'invalid_request' });
      });

      it('forward: a host loopback address that reaches the guest port', async () => {
        const [vm] = await c.list();
        const f = await c.forward(vm!.id, 8080);
        expect(f.address).toMatch(/^127\.0\.0\.1:\d+$/);
        expect(await firstLine(f.address)).toBe(`guest ${vm!.id}:8080`);
        await expect(c.forward(vm!.id, 70000)).rejects.toMatchObject({ code: 'invalid_request' });
      });

      it('networks: create, conflict twice, 409 while a VM is attached, then deleted', async () => {
        const n = await c.createNetwork({ name: 'lab', cidr: '10.20.0.0/24' });
        expect(n.gateway).toBe('10.20.0.1');
        await expect(c.createNetwork({ name: 'lab', cidr: '10.21.0.0/24' })).rejects.toMatchObject({ code: 'conflict' });
        await expect(c.createNetwork({ name: 'link', cidr: '169.254.0.0/24' })).rejects.toMatchObject({ code: 'invalid_request' });
        const vm = await c.create({ name: 'on-lab', network: 'lab', wait_for: 'none' });
        await expect(c.deleteNetwork('lab')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining(vm.id) });
        await c.delete(vm.id);
        await c.deleteNetwork('lab');
        await expect(c.network('lab')).rejects.toMatchObject({ code: 'not_found' });
      });

      it('metrics and attestation validate; stop, start, delete', async () => {
        const [vm] = await c.list();
        expect((await c.metrics(vm!.id)).host.attestation).toBe('released');
        expect((await c.attestation(vm!.id)).required).toBe(true);
        expect((await c.stop(vm!.id)).state).toBe('stopped');
        expect((await c.start(vm!.id)).state).not.toBe('stopped');
        await c.delete(vm!.id);
        expect(await c.list()).toEqual([]);
      });

      it('a wrong bearer is unauthorized (the OAuth guard, 401)', async () => {
        await expect(new VmManagerClient(double.url, 'wrong', { timeoutMs: 5000, ca }).list()).rejects.toMatchObject({
          code: 'unauthorized',
          status: 401,
          message: expect.stringContaining('invalid_token: missing or invalid bearer token'),
        });
      });

      it("every operation the client used is one of the document's", () => {
        const ops = new Set(double.seen.filter((s) => s !== 'unauthorized'));
        for (const op of ops) expect(Object.keys(ROUTES)).toContain(op);
        expect(ops.size).toBeGreaterThan(15);
      });
    },
  );
}

describe.skipIf(tlsSkip !== null)('TLS with a custom CA bundle', () => {
  it('without the bundle the certificate is refused (unavailable, the TLS reason named); with it the call works', async () => {
    const tls = makeTls();
    const double = await new StrictDouble({ tokenOk: (t) => t === TOKEN, https: { key: tls.key, cert: tls.cert } }).start();
    try {
      await expect(new VmManagerClient(double.url, TOKEN, { timeoutMs: 5000 }).host()).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/certificate/i),
      });
      await expect(new VmManagerClient(double.url, TOKEN, { timeoutMs: 5000, ca: makeTls().ca }).host()).rejects.toMatchObject({
        code: 'unavailable',
      });
      expect((await new VmManagerClient(double.url, TOKEN, { timeoutMs: 5000, ca: tls.ca }).host()).hostname).toBe('double');
    } finally {
      await double.close();
    }
  });
});

describe('a proxy in front of the manager', () => {
  it('answers 504 (an HTML page) to a create that waits for ready; the VM was made and is there to poll', async () => {
    const double = await new StrictDouble({ tokenOk: (t) => t === TOKEN, stepMs: 200, proxyTimeoutMs: 100 }).start();
    try {
      const c = new VmManagerClient(double.url, TOKEN, 5000);
      await expect(c.create({ name: 'slow', wait_for: 'ready' })).rejects.toMatchObject({
        code: 'timeout',
        status: 504,
        message: expect.stringContaining('proxy'),
      });
      const vm = (await c.list()).find((v) => v.name === 'slow');
      expect(vm?.state).not.toBe('ready');
    } finally {
      await double.close();
    }
  });
});
