/**
 * Issue 14's guest side of the daemon, with one real guest (QEMU/TCG, the test image): a guest→host
 * forward (create's povdesk.host_forwards) reaches a listener on the host's loopback through
 * GUEST_HOST_ALIAS under restrict=on, and nothing else on the host's loopback; PUT
 * /vms/{id}/povdesk/user-data replaces what the metadata service serves, through the app's own
 * client, and survives a manager restart.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_DATA_LIMIT } from '../../main/services/control-node/markers';
import { VmApiError, VmManagerClient } from '../../main/vm-api/client';
import { GUEST_HOST_ALIAS, USER_DATA_MAX_CHARS } from '../../main/vm-api/povdesk';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { metadataGet, pidsWith, stateWithImage, vmSkip } from './support';

const skip = vmSkip();

async function listen(banner: string): Promise<{ server: Server; port: number; hits: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    n++;
    s.end(banner);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, hits: () => n };
}

it("the user-data limit is Skytap's", () => {
  expect(USER_DATA_MAX_CHARS).toBe(USER_DATA_LIMIT);
});

describe.skipIf(skip !== null)('guest→host forwards and the user-data route (a real guest)', () => {
  let state: string;
  let m: RunningManager | null = null;
  let client: VmManagerClient;
  let forwarded: Awaited<ReturnType<typeof listen>>;
  let other: Awaited<ReturnType<typeof listen>>;
  let id = '';
  const md = () => join(state, 'metadata.sock');

  beforeAll(async () => {
    state = stateWithImage('vmm-hostfwd-');
    forwarded = await listen('HOST-FORWARD-OK\n');
    other = await listen('NOT-FORWARDED-SECRET\n');
    // learn mode: the freshly built test image has no golden values yet (as in the other boot suites)
    m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
    client = new VmManagerClient(m.url, 'tok');
  }, 120_000);

  afterAll(async () => {
    if (m && id) await m.vms.delete(id).catch(() => {});
    await m?.close({ stopVms: true });
    forwarded?.server.close();
    other?.server.close();
    if (state) {
      expect(pidsWith(state)).toEqual([]);
      rmSync(state, { recursive: true, force: true });
    }
  });

  it('create refuses bad forwards and changes nothing', async () => {
    const bad = [
      [{ guest_port: 0, host_port: 80 }],
      [{ guest_port: 80, host_port: 70000 }],
      [{ guest_port: 80, host_port: 81, extra: 1 }],
      [
        { guest_port: 80, host_port: 81 },
        { guest_port: 80, host_port: 82 },
      ],
      [1, 2, 3, 4, 5].map((i) => ({ guest_port: 8000 + i, host_port: 9000 + i })),
    ];
    for (const host_forwards of bad) {
      const e = await client
        .create({ name: 'bad-fwd', povdesk: { host_forwards: host_forwards as never }, wait_for: 'none' })
        .catch((x: unknown) => x);
      expect(e, JSON.stringify(host_forwards)).toBeInstanceOf(VmApiError);
      expect((e as VmApiError).code).toBe('invalid_request');
    }
    expect(await client.list()).toEqual([]);
  });

  it(
    'the guest reaches 127.0.0.1:<host_port> at GUEST_HOST_ALIAS:<guest_port>, again and again, under restrict=on; nothing else on ' +
      'the host',
    async () => {
      const vm = await client.create({
        name: 'hostfwd',
        cpus: 1,
        memory_mib: 512,
        disk_gib: 1,
        user_data: 'first',
        povdesk: { host_forwards: [{ guest_port: 8443, host_port: forwarded.port }] },
      });
      id = vm.id;
      expect(vm.state).toBe('ready');
      expect(vm.network).toBe('default'); // restricted: restrict=on
      expect(vm.povdesk.hostForwards).toEqual([{ guestPort: 8443, hostPort: forwarded.port }]);
      for (let i = 0; i < 2; i++) {
        const r = await client.exec(id, ['sh', '-c', `nc -w 5 ${GUEST_HOST_ALIAS} 8443 </dev/null`]);
        expect(r.stdout, r.stderr).toBe('HOST-FORWARD-OK\n');
      }
      expect(forwarded.hits()).toBe(2);
      // Without a forward the guest reaches neither the other listener nor anything at the alias.
      for (const target of [`${GUEST_HOST_ALIAS} ${other.port}`, `169.254.169.2 ${other.port}`, `${GUEST_HOST_ALIAS} 8444`]) {
        const r = await client.exec(id, ['sh', '-c', `nc -w 3 ${target} </dev/null; echo "nc-exit=$?"`]);
        expect(r.stdout, target).toMatch(/nc-exit=/);
        expect(r.stdout, target).not.toContain('SECRET');
      }
      expect(other.hits()).toBe(0);
    },
    600_000,
  );

  it(
    'PUT /vms/{id}/povdesk/user-data: unknown VM 404, bad body 400 changing nothing, a value served at once, null → 204, kept over ' +
      'a manager restart',
    async () => {
      expect((await metadataGet(md(), id, '/skytap/vms/self/user_data')).text).toBe('first');
      const unknown = await client.setUserData('abcdef12', 'x').catch((e: unknown) => e);
      expect(unknown).toMatchObject({ code: 'not_found', status: 404 });
      const raw = (body: string) =>
        fetch(`${m!.url}/api/v1/vms/${id}/povdesk/user-data`, {
          method: 'PUT',
          headers: { Authorization: 'Bearer tok', 'Content-Type': 'application/json' },
          body,
        });
      for (const body of [
        '',
        'not json',
        '{"user_data":5}',
        '{"user_data":"x","extra":1}',
        '{}',
        JSON.stringify({ user_data: 'x'.repeat(USER_DATA_MAX_CHARS + 1) }),
      ]) {
        const a = await raw(body);
        expect(a.status, body.slice(0, 40)).toBe(400);
        expect(((await a.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
      }
      expect((await metadataGet(md(), id, '/skytap/vms/self/user_data')).text).toBe('first');

      await client.setUserData(id, '#!/bin/sh\necho second\n');
      // the guest itself sees it through QEMU's proxy
      const seen = await client.exec(id, [
        'sh',
        '-c',
        "printf 'GET /skytap/vms/self/user_data HTTP/1.0\\r\\n\\r\\n' | nc -w 5 169.254.169.254 80",
      ]);
      expect(seen.stdout).toMatch(/^HTTP\/1\.1 200/);
      expect(seen.stdout.endsWith('\r\n\r\n#!/bin/sh\necho second\n')).toBe(true);
      expect((await client.get(id)).povdesk.hasUserData).toBe(true);

      // A restart of the manager (the VM keeps running) serves the same value.
      await m!.close();
      m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
      client = new VmManagerClient(m.url, 'tok');
      expect(m.recovered.reattached).toEqual([id]);
      expect(await metadataGet(md(), id, '/skytap/vms/self/user_data')).toEqual({ status: 200, text: '#!/bin/sh\necho second\n' });

      await client.setUserData(id, null);
      expect((await metadataGet(md(), id, '/skytap/vms/self/user_data')).status).toBe(204);
      expect((await client.get(id)).povdesk.hasUserData).toBe(false);
      // the forward was re-made by nobody: QEMU kept it across the manager's restart
      const r = await client.exec(id, ['sh', '-c', `nc -w 5 ${GUEST_HOST_ALIAS} 8443 </dev/null`]);
      expect(r.stdout).toBe('HOST-FORWARD-OK\n');
    },
    300_000,
  );
});
