import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../main/lib/sleep';
import { ROUTES } from '../../main/vm-api/schemas';
import { testCore, type TestCore } from '../support/core';
import { attachLocalManager } from '../vm/helpers';
import { StrictDouble } from './double';
import { firstLine, makeTls, opensslSkip } from './support';

const TOKEN = 'cluster-static-token-0123456789';

/**
 * The app's vm.* methods with a remote vm-manager that is the strict double (giantswarm's document
 * and nothing more), over https with the cluster's CA bundle: the Local VMs page's whole flow.
 */
describe.skipIf(opensslSkip() !== null)('vm.* against a cluster vm-manager that speaks only the document', () => {
  let double: StrictDouble;
  let t: TestCore;
  let caFile = '';
  beforeAll(async () => {
    const tls = makeTls();
    caFile = tls.caFile;
    double = await new StrictDouble({
      tokenOk: (tok) => tok === TOKEN,
      stepMs: 600,
      https: { key: tls.key, cert: tls.cert },
      proxyTimeoutMs: 2000,
    }).start();
    t = await testCore();
  });
  afterAll(async () => {
    await t?.close();
    await double?.close();
  });

  it('connects with URL, token and CA bundle; a bad CA path is refused and nothing is saved', async () => {
    await expect(
      t.call('vm.setConnection', { mode: 'remote', url: double.url, token: TOKEN, caBundle: '/nonexistent/ca.pem' }),
    ).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('/nonexistent/ca.pem') });
    expect((await t.call('vm.connection', {})).mode).toBe('local');
    const conn = await t.call('vm.setConnection', { mode: 'remote', url: double.url, token: TOKEN, caBundle: caFile });
    expect(conn).toMatchObject({ mode: 'remote', auth: 'token', tokenSet: true, caBundle: caFile });
    const host = await t.call('vm.host', {});
    expect(host).toMatchObject({ mode: 'remote', ready: true, hostname: 'double', accelerator: { chosen: 'kvm' } });
    expect((await t.call('vm.images', {})).images.map((i) => i.name)).toEqual(['giantswarm-vm-base']);
  });

  it('creates a VM as a job (wait_for none, then polling) through every documented state to ready', async () => {
    const steps: string[] = [];
    const off = t.jobs.onChange((j) => {
      if (j.kind === 'vm.create' && steps[steps.length - 1] !== j.progress.step) steps.push(j.progress.step);
    });
    const { jobId } = await t.call('vm.create', {
      name: 'web',
      image: 'giantswarm-vm-base',
      cpus: 2,
      memoryMib: 2048,
      diskGib: 20,
      requireAttestation: true,
    });
    const job = await t.jobs.wait(jobId);
    off();
    expect(job.error).toBeNull();
    const vm = (job.result as { vm: { state: string; sshPort: number | null; attestation: { initrdVerified: boolean | null } } }).vm;
    expect(vm).toMatchObject({ state: 'ready', sshPort: null, attestation: { initrdVerified: true } });
    expect(steps).toEqual(expect.arrayContaining(['creating', 'attesting', 'ready']));
  });

  it('a create whose answer is lost (connection dropped) still finds and follows the VM, once', async () => {
    double.dropNextCreate = true;
    const { jobId } = await t.call('vm.create', {
      name: 'lost-answer',
      image: 'giantswarm-vm-base',
      cpus: 1,
      memoryMib: 512,
      diskGib: 1,
      requireAttestation: false,
    });
    const job = await t.jobs.wait(jobId);
    expect(job.error).toBeNull();
    expect((job.result as { vm: { state: string } }).vm.state).toBe('ready');
    expect((await t.call('vm.list', {})).vms.filter((v) => v.name === 'lost-answer')).toHaveLength(1);
  });

  it('console, attestation (verdicts only), exec; forward needs the local manager', async () => {
    const web = (await t.call('vm.list', {})).vms.find((v) => v.name === 'web')!;
    const con = await t.call('vm.console', { id: web.id, lines: 2 });
    expect(con.lines).toHaveLength(2);
    const att = await t.call('vm.attestation', { id: web.id });
    expect(att.stages.map((s) => [s.stage, s.verified, s.pcrs.length])).toEqual([
      ['initrd', true, 0],
      ['ready', true, 0],
    ]);
    expect(await t.call('vm.exec', { id: web.id, command: ['echo', 'hi'] })).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0 });
    expect((await t.call('vm.exec', { id: web.id, command: ['sh', '-c', 'exit 3'] })).exitCode).toBe(3);
    await expect(t.call('vm.forward', { id: web.id, port: 80 })).rejects.toMatchObject({ code: 'unsupported' });
  });

  it("stop, a second stop is the document's conflict, delete", async () => {
    const web = (await t.call('vm.list', {})).vms.find((v) => v.name === 'web')!;
    expect((await t.call('vm.stop', { id: web.id })).vm.state).toBe('stopped');
    await expect(t.call('vm.stop', { id: web.id })).rejects.toMatchObject({ code: 'conflict' });
    await t.call('vm.delete', { id: web.id });
    await expect(t.call('vm.get', { id: web.id })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a wrong static token is unauthorized', async () => {
    await t.call('vm.setConnection', { mode: 'remote', token: 'not-the-cluster-token' });
    await expect(t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized' });
    await t.call('vm.setConnection', { mode: 'remote', token: TOKEN });
  });

  it('asked the double only for documented operations', () => {
    const ops = double.seen.filter((s) => s !== 'unauthorized');
    expect(ops.filter((o) => !(o in ROUTES))).toEqual([]);
  });
});

/**
 * Forwarding to this machine for a local VM: the manager's forward plus the app's 127.0.0.1
 * listener, listed and removable. The "local manager" here is the strict double (the real daemon's
 * forward is in test/vm-manager with QEMU), which the core's own supervisor reattaches to (test/vm/helpers.ts attachLocalManager).
 */
describe('forwarding a guest port of a local VM', () => {
  it('opens a listener on 127.0.0.1 that reaches the guest port; listed per VM; removed, it refuses connections', async () => {
    const double = await new StrictDouble({ tokenOk: (tok) => tok === TOKEN, stepMs: 10 }).start();
    const t = await testCore();
    attachLocalManager(t.home, { url: double.url, token: TOKEN });
    const app = t.services.vm;
    try {
      const job = await t.jobs.wait(
        app.create({ name: 'svc', image: 'giantswarm-vm-base', cpus: 1, memoryMib: 512, diskGib: 1, requireAttestation: false }),
      );
      const id = (job.result as { vm: { id: string } }).vm.id;
      const f = await app.forward(id, 5432);
      expect(f).toMatchObject({ vmId: id, vmName: 'svc', guestPort: 5432, localAddress: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
      expect(f.localAddress).not.toBe(f.managerAddress);
      expect(await firstLine(f.localAddress)).toBe(`guest ${id}:5432`);
      expect((await app.forward(id, 5432)).id).toBe(f.id); // the same port twice: the same forward
      expect(app.forwards.list(id).map((x) => x.guestPort)).toEqual([5432]);
      expect(app.forwards.list('00000000')).toEqual([]);
      await app.forwards.close(f.id);
      expect(app.forwards.list()).toEqual([]);
      await expect(firstLine(f.localAddress)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await expect(app.forwards.close(f.id)).rejects.toMatchObject({ code: 'not_found' });
      // deleting the VM removes its forwards
      const g = await app.forward(id, 22);
      await app.delete(id);
      await sleep(10);
      await expect(firstLine(g.localAddress)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await t.close();
      await double.close();
    }
  });
});
