/**
 * Conformance with a real guest (QEMU + swtpm + OVMF under TCG, the test image): create → ready →
 * exec → forward → console → attestation → metrics → delete through the daemon's /api/v1, every
 * answer validated against the document's schemas (main/vm-api/schemas.ts) and, on the way,
 * by Stoplight Prism as a validating proxy on giantswarm's own document (test/support/prism.ts;
 * POVDESK_GIANTSWARM_SPECS, a failure under CI=true when missing, else the calls go direct).
 * The fake-launcher suite covers the rest.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attestationSchema, consoleSchema, execResultSchema, forwardSchema, metricsSchema, vmSchema } from '../../main/vm-api/schemas';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { giantswarmDocument, specFolder, startPrism, type Prism } from '../support/prism';
import { caller, expectDoc, expectError } from './conformance-support';
import { pidsWith, stateWithImage, vmSkip } from './support';

const skip = vmSkip();
const spec = specFolder('POVDESK_GIANTSWARM_SPECS', 'openapi.yaml', '../shared/research/giantswarm');

describe.skipIf(skip !== null)('vm-manager /api/v1 with a real guest', () => {
  let m: RunningManager;
  let state: string;
  let call: ReturnType<typeof caller>;
  /** straight to the daemon: for the requests the document refuses on purpose */
  let direct: ReturnType<typeof caller>;
  let prism: Prism | null = null;
  let id = '';

  beforeAll(async () => {
    state = stateWithImage('vmm-confq-');
    // learn mode: the freshly built test image has no golden values yet (as in the other boot suites)
    m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
    direct = caller(m.url, 'tok');
    prism = spec.missing ? null : await startPrism('proxy', giantswarmDocument(spec.dir), m.url);
    call = prism ? caller(prism.url, 'tok') : direct;
  }, 120_000);

  afterAll(async () => {
    await prism?.close();
    await m?.close({ stopVms: true });
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it("POST /vms blocks until ready (attested) and answers the document's VM", async () => {
    const vm = expectDoc(
      await call('POST', '/vms', { name: 'conf-qemu', cpus: 1, memory_mib: 512, disk_gib: 1, user_data: 'conformance' }),
      201,
      vmSchema,
    );
    id = vm.id;
    expect(vm).toMatchObject({
      state: 'ready',
      booted: true,
      requireAttestation: true,
      cid: 0,
      attestation: { userDataReleased: true, initrd: { verified: true }, ready: { verified: true } },
    });
    expect(vm.sshPublicKey).toMatch(/^ssh-ed25519 /);
    expect(vm.bootedAt).toBeDefined();
    expect(pidsWith(vm.paths.dir ?? '??').length).toBeGreaterThan(0);
  }, 600_000);

  it("exec runs as root over SSH with the manager's key; a non-zero exit is a result", async () => {
    const r = expectDoc(
      await call('POST', `/vms/${id}/exec`, { command: ['sh', '-c', 'echo out; echo "err $(id -u)" >&2; exit 7'] }),
      200,
      execResultSchema,
    );
    expect(r).toEqual({ stdout: 'out\n', stderr: 'err 0\n', exitCode: 7 });
    const vm = expectDoc(await call('GET', `/vms/${id}`), 200, vmSchema);
    const keys = expectDoc(
      await call('POST', `/vms/${id}/exec`, { command: ['cat', '/root/.ssh/authorized_keys'] }),
      200,
      execResultSchema,
    );
    expect(keys.stdout.split('\n')[0]?.startsWith(vm.sshPublicKey)).toBe(true); // the first root key
    const quoted = expectDoc(
      await call('POST', `/vms/${id}/exec`, { command: ['printf', '%s|', 'a b', "it's", '$HOME'] }),
      200,
      execResultSchema,
    );
    expect(quoted.stdout).toBe("a b|it's|$HOME|");
  }, 120_000);

  it("forward exposes a guest port on the host's loopback", async () => {
    const served = expectDoc(
      await call('POST', `/vms/${id}/exec`, {
        command: ['sh', '-c', 'mkdir -p /tmp/www && echo hello-from-guest > /tmp/www/index.html && busybox httpd -p 8080 -h /tmp/www'],
      }),
      200,
      execResultSchema,
    );
    expect(served.exitCode, served.stderr).toBe(0);
    const f = expectDoc(await call('POST', `/vms/${id}/forward`, { port: 8080 }), 200, forwardSchema);
    expect(f.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const page = await fetch(`http://${f.address}/index.html`);
    expect(await page.text()).toBe('hello-from-guest\n');
    expectError(await direct('POST', `/vms/${id}/forward`, { port: 70000 }), 'invalid_request');
  }, 120_000);

  it("metrics, console and attestation answer the document's shapes", async () => {
    const mt = expectDoc(await call('GET', `/vms/${id}/metrics`), 200, metricsSchema);
    expect(mt.host).toMatchObject({ state: 'ready', attestation: 'released', disk_bytes: 1024 ** 3, pid: expect.any(Number) });
    expect(mt.host.cpu_seconds).toBeGreaterThan(0);
    expect(mt.host.memory_rss_bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(mt.host.boot_to_ready_seconds).toBeGreaterThan(0);
    expect(expectDoc(await call('GET', `/vms/${id}/console?lines=50`), 200, consoleSchema).console).toMatch(/READY/);
    expectDoc(await call('GET', `/vms/${id}/attestation`), 200, attestationSchema);
  });

  it('DELETE stops the guest and removes it', async () => {
    const dir = expectDoc(await call('GET', `/vms/${id}`), 200, vmSchema).paths.dir ?? '??';
    expect((await call('DELETE', `/vms/${id}`)).status).toBe(204);
    expect(pidsWith(dir)).toEqual([]);
    expectError(await call('POST', `/vms/${id}/exec`, { command: ['true'] }), 'not_found');
  }, 120_000);

  it('Prism found every request and answer of the lifecycle valid (under CI=true the document must be there)', async () => {
    if (process.env.CI === 'true') expect(spec.missing).toBeNull();
    if (!prism) return;
    expect((await prism.violations()).join('\n')).toBe('');
    expect(prism.log()).toMatch(/Forwarding "post" request to .*\/api\/v1\/vms\//);
  });
});
