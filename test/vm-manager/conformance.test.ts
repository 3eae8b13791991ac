/**
 * Conformance with giantswarm/vm-manager's api/openapi.yaml (@ dc39fe35; schemas in
 * main/vm-api/schemas.ts), route by route: a request the document allows succeeds and its answer
 * validates; one it forbids gets the document's error shape and code. The daemon's real REST
 * handler, VM service, records, supervision, networks and host report, with the fake launcher in
 * place of QEMU (conformance-qemu.test.ts boots a real guest).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  attestationSchema,
  consoleSchema,
  forwardSchema,
  hostSchema,
  imageSchema,
  metricsSchema,
  networkSchema,
  ROUTES,
  vmSchema,
} from '../../main/vm-api/schemas';
import { createApiHandler } from '../../main/vm-manager/api';
import { hostReport } from '../../main/vm-manager/host';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { leaseFor, Networks } from '../../main/vm-manager/networks';
import { VmService } from '../../main/vm-manager/vms';
import { needs } from '../support/system';
import { caller, expectDoc, expectError } from './conformance-support';
import { attestingGuest, FakeLauncher, writeStubTestImage } from './fake-launcher';

const skip = needs(['qemu-system-x86_64', 'swtpm', 'dropbearkey', 'ssh-keygen']);
const TOKEN = 'conformance-token';

describe.skipIf(skip)("vm-manager speaks giantswarm's /api/v1 (fake launcher)", () => {
  let state: string;
  let server: Server;
  let vms: VmService;
  let launcher: FakeLauncher;
  let call: ReturnType<typeof caller>;

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'vmm-conf-'));
    writeStubTestImage(state);
    launcher = new FakeLauncher();
    const networks = new Networks(state);
    vms = new VmService({
      stateDir: state,
      launcher,
      networkMode: (n) => networks.get(n).mode,
      // leases as the daemon makes them; the fake launcher starts no switch
      lan: { leaseFor: (n, id, taken) => leaseFor(networks.get(n), id, taken), up: async (n) => `/no-switch/${n}` },
      timeouts: { startMs: 1000, bootMs: 1500, powerdownMs: 200, termMs: 200 },
    });
    launcher.onStart = attestingGuest(vms);
    server = createServer(createApiHandler({ stateDir: state, token: TOKEN, vms, networks, host: () => hostReport() }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    call = caller(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, TOKEN);
  }, 60_000);

  afterAll(async () => {
    vms?.detach();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it('GET /openapi.yaml serves a document with every operation, generated from the schemas the routes use', async () => {
    const a = await call('GET', '/openapi.yaml');
    expect(a.status).toBe(200);
    expect(a.type).toMatch(/^application\/yaml/);
    const doc = JSON.parse(a.text) as {
      openapi: string;
      servers: { url: string }[];
      paths: Record<
        string,
        Record<
          string,
          { operationId: string; responses: Record<string, { content?: Record<string, { schema: { required?: string[] } }> }> }
        >
      >;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0]?.url).toBe('/api/v1');
    for (const [op, r] of Object.entries(ROUTES)) {
      const served = doc.paths[r.path]?.[r.method.toLowerCase()];
      expect(served?.operationId, `${r.method} ${r.path}`).toBe(op);
      expect(Object.keys(served?.responses ?? {}).sort()).toEqual([String(r.status), ...r.errors.map(String)].sort());
    }
    const vmDoc = doc.paths['/vms/{id}']?.get?.responses['200']?.content?.['application/json']?.schema;
    expect(vmDoc?.required?.sort()).toEqual(
      [
        'id',
        'name',
        'image',
        'cpus',
        'memoryMiB',
        'diskGiB',
        'network',
        'requireAttestation',
        'state',
        'cid',
        'machineID',
        'booted',
        'sshPublicKey',
        'attestation',
        'createdAt',
        'paths',
      ].sort(),
    );
  });

  it("GET /host: the document's Host; what is not used here says so", async () => {
    const h = expectDoc(await call('GET', '/host'), 200, hostSchema);
    expect(h.vhostVsock).toMatchObject({ path: '/dev/vhost-vsock', accessible: false });
    expect(h.vhostVsock.error).toMatch(/not used/);
    expect(h.systemd.found).toBe(false);
    expect(h.qemu.found).toBe(true);
    expect(h.storageProviders).toEqual([]);
  });

  it('GET /images and /images/{ref} (bare id or <id>_<version>); an unknown ref is 404', async () => {
    const list = expectDoc(await call('GET', '/images'), 200, z.array(imageSchema));
    expect(list.map((i) => i.id)).toEqual([TEST_IMAGE]);
    const one = expectDoc(await call('GET', `/images/${TEST_IMAGE}`), 200, imageSchema);
    expect(one.uki).toMatch(/^none: /);
    expectDoc(await call('GET', `/images/${TEST_IMAGE}_${one.version}`), 200, imageSchema);
    expectError(await call('GET', '/images/nope'), 'not_found');
  });

  it('networks: list, create (201), get, refuse bad bodies, duplicates and unknown names', async () => {
    const list = expectDoc(await call('GET', '/networks'), 200, z.array(networkSchema));
    expect(list.map((n) => n.spec.name)).toEqual(['default', 'nat']);
    const made = expectDoc(
      await call('POST', '/networks', { name: 'lab', cidr: '10.20.0.0/24', dns_search_domain: 'lab.internal' }),
      201,
      networkSchema,
    );
    expect(made).toMatchObject({
      spec: { name: 'lab', cidr: '10.20.0.0/24', gatewayIP: '10.20.0.1', dnsSearchDomain: 'lab.internal', enableIMDS: true },
      gateway: '10.20.0.1',
      leases: [],
    });
    expectDoc(await call('GET', '/networks/lab'), 200, networkSchema);
    expectError(await call('POST', '/networks', { name: 'lab', cidr: '10.21.0.0/24' }), 'conflict');
    expectError(await call('POST', '/networks', { name: 'x', cidr: '169.254.0.0/16' }), 'invalid_request', /169\.254/);
    expectError(await call('POST', '/networks', { name: 'x', cidr: '10.0.0.0/8' }), 'invalid_request', /\/16 to \/29/);
    expectError(
      await call('POST', '/networks', { name: 'x', cidr: '10.0.0.0/24', dnsSearchDomain: 'camel' }),
      'invalid_request',
      /unknown field "dnsSearchDomain"/,
    );
    expectError(await call('POST', '/networks', { name: 'Not_A_Label', cidr: '10.0.0.0/24' }), 'invalid_request');
    expectError(await call('POST', '/networks', undefined, { raw: '{' }), 'invalid_request', /not JSON/);
    expectError(await call('GET', '/networks/nope'), 'not_found');
    expectError(await call('DELETE', '/networks/nope'), 'not_found');
  });

  it("POST /vms with only a name: 201, the document's defaults, blocks until ready, record validates", async () => {
    const vm = expectDoc(await call('POST', '/vms', { name: 'conf-defaults' }), 201, vmSchema);
    expect(vm).toMatchObject({
      name: 'conf-defaults',
      cpus: 2,
      memoryMiB: 2048,
      diskGiB: 20,
      network: 'default',
      requireAttestation: true,
      state: 'ready',
      booted: true,
      cid: 0,
      image: TEST_IMAGE,
    });
    expect(vm.machineID).toMatch(/^[0-9a-f]{32}$/);
    expect(vm.sshPublicKey).toMatch(/^ssh-ed25519 /);
    expect(vm.attestation).toMatchObject({ required: true, userDataReleased: true, initrd: { verified: true } });
    expect(vm.readyAt).toBeDefined();
    const list = expectDoc(await call('GET', '/vms'), 200, z.array(vmSchema));
    expect(list.map((v) => v.id)).toContain(vm.id);
    expectDoc(await call('GET', `/vms/${vm.id}`), 200, vmSchema);
  });

  it('POST /vms refuses what the document forbids with 400 invalid_request and creates nothing', async () => {
    const before = vms.list().length;
    const bad: [unknown, RegExp][] = [
      [{}, /name/],
      [{ name: 'x', memoryMiB: 512 }, /unknown field "memoryMiB"/],
      [{ name: 'x', memory_mib: 128 }, /memory_mib/],
      [{ name: 'x', cpus: 1.5 }, /cpus/],
      [{ name: 'x', wait_for: 'booted' }, /wait_for/],
      [{ name: 'x', metadata: { k: 1 } }, /metadata/],
      [{ name: 'Bad Name' }, /DNS label/],
      [{ name: 'x', image: 'no-such-image' }, /no image/],
      [{ name: 'x', network: 'no-such-net' }, /network "no-such-net" does not exist/],
      [{ name: 'x', kubernetes_version: '1.31.0' }, /no Kubernetes/],
    ];
    for (const [body, msg] of bad) expectError(await call('POST', '/vms', body), 'invalid_request', msg);
    expect(vms.list().length).toBe(before);
  });

  it("POST /vms wait_for none returns at once; the create's fields come back on the record", async () => {
    launcher.onStart = null;
    const vm = expectDoc(
      await call('POST', '/vms', {
        name: 'conf-none',
        cpus: 1,
        memory_mib: 256,
        disk_gib: 1,
        network: 'lab',
        wait_for: 'none',
        require_attestation: false,
        hostname: 'box',
        metadata: { role: 'test' },
        ssh_authorized_keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheTest user@x'],
        user_data: '{"ignition":{}}',
      }),
      201,
      vmSchema,
    );
    expect(vm).toMatchObject({
      cpus: 1,
      memoryMiB: 256,
      diskGiB: 1,
      network: 'lab',
      requireAttestation: false,
      hostname: 'box',
      metadata: { role: 'test' },
      state: 'booting',
    });
    expect(vm.sshAuthorizedKeys).toHaveLength(1);
    expect(vm.paths.userData).toBeDefined();
    // 409 while a VM is attached to the network, running or stopped.
    expectError(await call('DELETE', '/networks/lab'), 'conflict', new RegExp(vm.id));
    const net = expectDoc(await call('GET', '/networks/lab'), 200, networkSchema);
    // the lease is the record's: the cidr's first address after the gateway, the id in the MAC
    expect(net.leases).toEqual([{ vmID: vm.id, mac: vm.mac, ip: '10.20.0.2' }]);
    expect(vm.ip).toBe('10.20.0.2');
    expect(vm.mac).toBe(`52:54:${vm.id.match(/../g)!.join(':')}`);
    expectDoc(await call('POST', `/vms/${vm.id}/stop`), 200, vmSchema);
    expectError(await call('DELETE', '/networks/lab'), 'conflict');
    expect((await call('DELETE', `/vms/${vm.id}`)).status).toBe(204);
    expect((await call('DELETE', '/networks/lab')).status).toBe(204);
    launcher.onStart = attestingGuest(vms);
  });

  it('POST /vms: 504 timeout if READY comes too late, 500 vm_failed if the VM fails; both name the VM, which still exists', async () => {
    launcher.onStart = null;
    const slow = expectError(await call('POST', '/vms', { name: 'conf-silent' }), 'timeout');
    const slowId = /VM ([0-9a-f]{8})/.exec(slow.error.message)?.[1] ?? '';
    expect(expectDoc(await call('GET', `/vms/${slowId}`), 200, vmSchema).state).toBe('running');
    launcher.failNextStart = 'swtpm did not start: fake';
    const failed = expectError(await call('POST', '/vms', { name: 'conf-fails' }), 'vm_failed', /swtpm did not start/);
    const failedId = /VM ([0-9a-f]{8})/.exec(failed.error.message)?.[1] ?? '';
    expect(expectDoc(await call('GET', `/vms/${failedId}`), 200, vmSchema)).toMatchObject({
      state: 'failed',
      lastError: 'swtpm did not start: fake',
    });
    // a crash before READY while waiting is vm_failed too
    launcher.onStart = (r) => setTimeout(() => launcher.end(r.pids.qemu), 50);
    expectError(await call('POST', '/vms', { name: 'conf-crash' }), 'vm_failed', /failed before "ready"/);
    launcher.onStart = attestingGuest(vms);
    for (const id of [slowId, failedId, vms.list().find((v) => v.name === 'conf-crash')?.id])
      expect((await call('DELETE', `/vms/${id}`)).status).toBe(204);
  });

  it('start / stop / reboot: 200 with the record, 409 from the wrong state, 404 for an unknown VM', async () => {
    const vm = expectDoc(await call('POST', '/vms', { name: 'conf-life' }), 201, vmSchema);
    expectError(await call('POST', `/vms/${vm.id}/start`), 'conflict', /start works only from stopped or failed/);
    expect(expectDoc(await call('POST', `/vms/${vm.id}/reboot`), 200, vmSchema).state).toBe('booting');
    expect(expectDoc(await call('POST', `/vms/${vm.id}/stop`), 200, vmSchema).state).toBe('stopped');
    expectError(await call('POST', `/vms/${vm.id}/stop`), 'conflict');
    expectError(await call('POST', `/vms/${vm.id}/reboot`), 'conflict');
    expect(expectDoc(await call('POST', `/vms/${vm.id}/start`), 200, vmSchema).state).toMatch(/^(booting|attesting|ready)$/);
    for (const op of ['start', 'stop', 'reboot']) expectError(await call('POST', `/vms/0badc0de/${op}`), 'not_found');
  });

  it('exec: bad bodies are 400, a VM that is not running is 409, an unknown VM 404', async () => {
    const vm = vms.list().find((v) => v.name === 'conf-life');
    expect(vm).toBeDefined();
    const id = vm?.id ?? '';
    expectError(await call('POST', `/vms/${id}/exec`, {}), 'invalid_request', /command/);
    expectError(await call('POST', `/vms/${id}/exec`, { command: [] }), 'invalid_request');
    expectError(await call('POST', `/vms/${id}/exec`, { command: 'uname -a' }), 'invalid_request');
    expectError(await call('POST', `/vms/${id}/exec`, { command: ['true'], timeout: 5 }), 'invalid_request', /unknown field "timeout"/);
    expectError(await call('POST', '/vms/0badc0de/exec', { command: ['true'] }), 'not_found');
    await call('POST', `/vms/${id}/stop`);
    expectError(await call('POST', `/vms/${id}/exec`, { command: ['true'] }), 'conflict', /stopped/);
  });

  it('forward: a host loopback address, the same one again for the same port, kept across a restart; bad ports 400', async () => {
    const id = vms.list().find((v) => v.name === 'conf-life')?.id ?? '';
    expectError(await call('POST', `/vms/${id}/forward`, { port: 8080 }), 'conflict', /stopped/);
    await call('POST', `/vms/${id}/start`);
    const f = expectDoc(await call('POST', `/vms/${id}/forward`, { port: 8080 }), 200, forwardSchema);
    expect(f).toMatchObject({ id, port: 8080 });
    expect(f.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(launcher.forwards).toContainEqual({ vm: id, hostPort: Number(f.address.split(':')[1]), guestPort: 8080 });
    expect(expectDoc(await call('POST', `/vms/${id}/forward`, { port: 8080 }), 200, forwardSchema)).toEqual(f);
    for (const port of [0, 65536, 'x', 22.5]) expectError(await call('POST', `/vms/${id}/forward`, { port }), 'invalid_request', /port/);
    expectError(await call('POST', '/vms/0badc0de/forward', { port: 80 }), 'not_found');
    await call('POST', `/vms/${id}/stop`);
    await call('POST', `/vms/${id}/start`);
    expect(vms.get(id).forwards).toEqual([{ port: 8080, hostPort: Number(f.address.split(':')[1]) }]);
  });

  it('console, attestation, metrics, report: shapes, bad lines 400, unknown VM 404, no report upload 404', async () => {
    const id = vms.list().find((v) => v.name === 'conf-life')?.id ?? '';
    const c = expectDoc(await call('GET', `/vms/${id}/console?lines=5`), 200, consoleSchema);
    expect(c.console).toMatch(/fake boot/);
    for (const lines of ['0', '10001', 'x'])
      expectError(await call('GET', `/vms/${id}/console?lines=${lines}`), 'invalid_request', /lines/);
    expectDoc(await call('GET', `/vms/${id}/attestation`), 200, attestationSchema);
    const m = expectDoc(await call('GET', `/vms/${id}/metrics`), 200, metricsSchema);
    expect(m.host).toMatchObject({
      disk_bytes: 20 * 1024 ** 3,
      attestation: expect.stringMatching(/^(pending|released)$/),
      network: { name: 'default' },
    });
    expect(m.guest).toBeNull();
    expect(m.note).toMatch(/systemd-report/);
    expectError(await call('GET', `/vms/${id}/report`), 'not_found', /no systemd-report/);
    for (const op of ['console', 'attestation', 'metrics', 'report']) expectError(await call('GET', `/vms/0badc0de/${op}`), 'not_found');
  });

  it('DELETE /vms/{id}: 204, then 404; unknown routes and ids answer the error shape; no token is 401', async () => {
    const id = vms.list().find((v) => v.name === 'conf-life')?.id ?? '';
    const del = await call('DELETE', `/vms/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectError(await call('DELETE', `/vms/${id}`), 'not_found');
    expectError(await call('GET', `/vms/${id}`), 'not_found');
    expectError(await call('GET', '/vms/not-an-id'), 'not_found');
    expectError(await call('GET', '/nothing-here'), 'not_found', /no route/);
    const noToken = await call('GET', '/vms', undefined, { auth: false });
    expect(noToken.status).toBe(401);
  });
});
