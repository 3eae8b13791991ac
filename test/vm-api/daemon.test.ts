/**
 * The same app code against the real daemon's REST handler (its VM service, records, networks and
 * host report; gsd's fake launcher in place of QEMU, as in test/vm-manager/conformance.test.ts):
 * the client validates every answer with the document's schemas, so this shows the local daemon's
 * answers pass the checks a cluster's manager must pass, and the app reads the daemon's extras.
 * The handlers suite (test/vm/handlers.test.ts) does the same with QEMU.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectedVmManager } from '../../main/services/vm/service';
import { VmManagerClient } from '../../main/vm-api/client';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { needs } from '../support/system';
import { testCore, type TestCore } from '../support/core';
import { attachLocalManager } from '../vm/helpers';
import { startFakeDaemon, type FakeDaemon } from '../vm-manager/fake-launcher';

const skip = needs(['qemu-system-x86_64', 'swtpm', 'dropbearkey', 'ssh-keygen']);
const TOKEN = 'daemon-token-0123456789abcdef';

describe.skipIf(skip)("the app's vm service against the real daemon handler (fake launcher)", () => {
  let state: string;
  let d: FakeDaemon;
  let t: TestCore;
  let app: ConnectedVmManager;
  let url = '';

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'vmm-app-'));
    d = await startFakeDaemon(state, TOKEN);
    ({ url } = d);
    // The real core, whose supervisor reattaches to this daemon as its local manager.
    t = await testCore();
    attachLocalManager(t.home, { url, token: TOKEN, stateDir: state });
    app = t.services.vm;
  }, 60_000);

  afterAll(async () => {
    await d?.close();
    await t?.close();
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it("host report and images: the document's fields validate, the daemon's tool list and image name are read", async () => {
    const host = await app.host();
    expect(host.tools.map((t) => t.name)).toEqual(['qemu-system-x86_64', 'qemu-img', 'swtpm', 'tpm2-tools', 'busybox']);
    expect(host.accelerator.reason).not.toBe('not reported by the vm-manager');
    expect((await app.images()).map((i) => [i.name, i.kind])).toEqual([[TEST_IMAGE, 'kernel']]);
  });

  it("create polls the VM to ready; the record carries the daemon's SSH port; console, attestation, stop, start, delete", async () => {
    const job = await t.jobs.wait(
      app.create({ name: 'app-one', image: TEST_IMAGE, cpus: 1, memoryMib: 256, diskGib: 1, requireAttestation: true }),
    );
    expect(job.error).toBeNull();
    const vm = (
      job.result as { vm: { id: string; state: string; sshPort: number | null; attestation: { initrdVerified: boolean | null } } }
    ).vm;
    expect(vm.state).toBe('ready');
    expect(vm.attestation.initrdVerified).toBe(true);
    expect(vm.sshPort).toEqual(expect.any(Number));
    expect(await app.console(vm.id, 5)).toEqual(expect.any(Array));
    expect((await app.attestation(vm.id)).stages.map((s) => s.stage)).toContain('initrd');
    expect((await app.action(vm.id, 'stop')).state).toBe('stopped');
    await expect(app.action(vm.id, 'stop')).rejects.toMatchObject({ code: 'conflict' });
    await app.delete(vm.id);
    await expect(app.get(vm.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("the client's network calls and the document's errors against the daemon", async () => {
    const c = new VmManagerClient(url, TOKEN, 5000);
    expect((await c.createNetwork({ name: 'lab', cidr: '10.30.0.0/24' })).spec.name).toBe('lab');
    await expect(c.createNetwork({ name: 'lab', cidr: '10.31.0.0/24' })).rejects.toMatchObject({ code: 'conflict', status: 409 });
    await c.deleteNetwork('lab');
    await expect(c.network('lab')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await expect(c.create({ name: 'x', wait_for: 'none', extra: 1 } as never)).rejects.toMatchObject({
      code: 'invalid_request',
      status: 400,
    });
    await expect(new VmManagerClient(url, 'wrong', 5000).host()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    expect(await c.openapi()).toMatch(/"openapi": "3\.1\.0"|^openapi: 3\.1\.0/m);
  });
});
