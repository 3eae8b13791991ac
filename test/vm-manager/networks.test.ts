/**
 * Issue 34: networks are real (three real guests under TCG, shared by every assertion): two VMs on
 * one network get their leases by DHCP and reach each other by address and by name on any port;
 * a VM on another network reaches neither; no guest reaches a listener on the host's 127.0.0.1;
 * GET /networks' leases match the VM records; DELETE is 409 while VMs are attached; another local
 * user cannot plug into a network's switch; Internet access lets a VM out but not to the host's
 * loopback; a saved clean state comes back on reset (saved while stopped: the disk as saved and a
 * cold boot; saved while ready: its memory resumed, ready only after a fresh quote); the
 * switch goes with the last VM.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { needs } from '../support/system';
import { ApiAnswerError, pidsWith, stateWithImage, TestClient, until, vmSkip } from './support';

const skip = vmSkip() ?? needs(['vde_switch', 'vde_plug', 'passt', 'ssh']);

type Povdesk = Awaited<ReturnType<TestClient['get']>> & {
  povdesk: { cleanMemory: boolean; cleanNote: string | null; lastReset: { memory: boolean; note: string | null } | null };
};
type NetworkAnswer = {
  spec: { name: string; cidr: string; gatewayIP: string };
  gateway: string;
  leases: { vmID: string; mac: string; ip: string }[];
};

describe.skipIf(skip !== null)('networks: DHCP, DNS, reachability and isolation (real guests)', () => {
  let state = '';
  let m: RunningManager | null = null;
  let c: TestClient;
  let listener: Server;
  let hits = 0;
  let port = 0;
  const vm: Record<'a1' | 'a2' | 'b1', { id: string; ip: string; mac: string }> = {} as never;
  const sh = async (who: keyof typeof vm, cmd: string) => c.exec(vm[who].id, ['sh', '-c', cmd]);

  beforeAll(async () => {
    state = stateWithImage('vmm-networks-');
    listener = createServer((s) => {
      hits++;
      s.end('HOST-LOOPBACK-SECRET\n');
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    port = (listener.address() as { port: number }).port;
    m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
    c = new TestClient(m.url, 'tok');
    await c.call('POST', '/networks', { name: 'lab-a', cidr: '10.77.1.0/24', dns_search_domain: 'pov.test' });
    await c.call('POST', '/networks', { name: 'lab-b', cidr: '10.77.2.0/24' });
    const made = await Promise.all(
      (['a1', 'a2', 'b1'] as const).map((n) =>
        c.create({ name: `net-${n}`, network: n.startsWith('a') ? 'lab-a' : 'lab-b', cpus: 1, memory_mib: 768, wait_for: 'none' }),
      ),
    );
    (['a1', 'a2', 'b1'] as const).forEach((n, i) => (vm[n] = { id: made[i]!.id, ip: '', mac: made[i]!.mac ?? '' }));
    for (const n of ['a1', 'a2', 'b1'] as const) {
      const r = await until(
        `${n} ready`,
        async () => {
          const v = await c.get(vm[n].id);
          if (v.state === 'failed') throw new Error(`${n} failed: ${v.lastError}`);
          return v.state === 'ready' && v;
        },
        240_000,
        1000,
      );
      vm[n].ip = r.ip ?? '';
    }
  }, 300_000);

  afterAll(async () => {
    listener?.close();
    await m?.close({ stopVms: true });
    if (state) {
      await until('no process left', () => pidsWith(state).length === 0, 10_000).catch(() => {});
      expect(pidsWith(state)).toEqual([]);
      rmSync(state, { recursive: true, force: true });
    }
  }, 120_000);

  it('gives each VM the lease its record names, by DHCP, and lists it on the network', async () => {
    expect(vm.a1.ip).toMatch(/^10\.77\.1\.\d+$/);
    expect(vm.a2.ip).toMatch(/^10\.77\.1\.\d+$/);
    expect(vm.a1.ip).not.toBe(vm.a2.ip);
    expect(vm.b1.ip).toMatch(/^10\.77\.2\.\d+$/);
    const a = await c.call<NetworkAnswer>('GET', '/networks/lab-a');
    expect(a.gateway).toBe('10.77.1.1');
    expect(a.leases.sort((x, y) => x.ip.localeCompare(y.ip))).toEqual(
      [vm.a1, vm.a2].map((v) => ({ vmID: v.id, mac: v.mac, ip: v.ip })).sort((x, y) => x.ip.localeCompare(y.ip)),
    );
    const all = await c.call<NetworkAnswer[]>('GET', '/networks');
    expect(all.find((n) => n.spec.name === 'lab-b')?.leases).toEqual([{ vmID: vm.b1.id, mac: vm.b1.mac, ip: vm.b1.ip }]);
    for (const n of ['a1', 'a2', 'b1'] as const) {
      const out = await sh(n, "ip -o -4 addr show eth1 | awk '{print $4}'; cat /sys/class/net/eth1/address");
      expect(out.stdout.trim().split('\n')).toEqual([`${vm[n].ip}/24`, vm[n].mac]);
    }
  });

  it('two VMs on one network reach each other by address and by name, on any port', async () => {
    expect((await sh('a1', `ping -c 1 -W 5 ${vm.a2.ip}`)).exitCode).toBe(0);
    expect((await sh('a2', 'ping -c 1 -W 5 net-a1')).exitCode).toBe(0);
    const look = await sh('a1', 'nslookup net-a2; nslookup net-a2.pov.test');
    expect(look.stdout.split(vm.a2.ip).length - 1).toBeGreaterThanOrEqual(2);
    // dropbear on the other VM's port 22, straight over the network (no forward involved)
    const banner = await sh('a1', `echo | nc -w 5 ${vm.a2.ip} 22 | head -c 20`);
    expect(banner.stdout).toMatch(/^SSH-2\.0-dropbear/);
  });

  it('a VM on another network reaches neither, not even by name', async () => {
    expect((await sh('b1', `ping -c 1 -W 3 ${vm.a1.ip}`)).exitCode).not.toBe(0);
    expect((await sh('a1', `ping -c 1 -W 3 ${vm.b1.ip}`)).exitCode).not.toBe(0);
    expect((await sh('b1', `echo | nc -w 3 ${vm.a2.ip} 22`)).stdout).toBe('');
    const look = await sh('b1', 'nslookup net-a1');
    expect(look.stdout).not.toContain(vm.a1.ip);
  });

  it("no guest reaches a listener on the host's 127.0.0.1, through the gateway or eth0", async () => {
    const out = await sh('a1', `for h in 10.77.1.1 169.254.169.2 127.0.0.1; do echo | nc -w 3 $h ${port}; done; echo done`);
    expect(out.stdout).not.toContain('SECRET');
    expect(hits).toBe(0);
  });

  it('DELETE /networks/{name} is 409 while a VM is attached, and another user cannot plug into the switch', async () => {
    const e = await c.call('DELETE', '/networks/lab-a').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiAnswerError);
    expect((e as ApiAnswerError).status).toBe(409);
    const sock = join(state, 'networks', 'lab-a', 'switch');
    expect(existsSync(join(sock, 'ctl'))).toBe(true);
    const nobody = spawnSync('runuser', ['-u', 'nobody', '--', 'vde_plug', `vde://${sock}`], {
      input: '',
      timeout: 5000,
      encoding: 'utf8',
    });
    expect(nobody.status).not.toBe(0);
    expect(nobody.stderr).toMatch(/Permission denied/);
  });

  it(
    "Internet access: out through the VM's own passt to this host's outside address, never to its loopback; with no route out, a " +
      'start that says so',
    async () => {
      // passt NATs through the interface of the default route: a machine without one (offline, a sandbox) cannot give a VM the Internet.
      const routeOut = execFileSync('ip', ['-4', 'route', 'show', 'default'], { encoding: 'utf8' }).trim() !== '';
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
      // It answers once the guest has spoken: an answer and FIN sent before passt has finished the guest's handshake
      // can be lost (passt 2023.03 here), and the guest's nc then waits minutes (seen: 5.5 min, CI timed out).
      const out = createServer((s) => s.once('data', () => s.end('OUTSIDE-OK\n')));
      await new Promise<void>((r) => out.listen(0, outside ?? '127.0.0.1', r));
      // Ready, or why not: a VM that fails says so at once; one that waits (attesting, booting) is described when the wait ends.
      const ready = (what: string) =>
        until(
          what,
          async () => {
            const v = await c.get(vm.b1.id);
            if (v.state === 'failed') throw new Error(`b1 failed: ${v.lastError}`);
            return v.state === 'ready' && v;
          },
          200_000,
          1000,
        ).catch(async (e: unknown) => {
          const v = await c.get(vm.b1.id);
          throw new Error(
            `${e instanceof Error ? e.message : String(e)}; ` +
              `b1: ${JSON.stringify({ state: v.state, lastError: v.lastError, attestation: v.attestation })}`,
          );
        });
      try {
        expect(
          (await c.call<{ povdesk: { internet: boolean } }>('PUT', '/networks/lab-b/povdesk/internet', { internet: true })).povdesk
            .internet,
        ).toBe(true);
        await c.stop(vm.b1.id);
        const refused = await c.start(vm.b1.id).then(
          () => null,
          (e: unknown) => e,
        );
        if (!routeOut) {
          expect(refused).toBeInstanceOf(ApiAnswerError);
          expect((refused as Error).message).toMatch(
            /Internet access is on for network lab-b, but this machine has no route out .* turn Internet access off/,
          );
          expect((await c.get(vm.b1.id)).state).toBe('failed');
          expect(pidsWith(vm.b1.id)).toEqual([]); // no qemu, swtpm or passt left from the failed start
          // turned off, the VM starts again: nothing about the failed start lingers
          await c.call('PUT', '/networks/lab-b/povdesk/internet', { internet: false });
          await c.start(vm.b1.id);
          await ready('b1 ready without Internet access');
          return;
        }
        expect(refused).toBeNull();
        await ready('b1 ready again with Internet access');
        expect((await sh('b1', "ip -o -4 addr show eth2 | awk '{print $4}'")).stdout.trim()).toBe('10.0.2.15/24');
        if (outside)
          expect((await sh('b1', `echo hello | timeout 20 nc -w 5 ${outside} ${(out.address() as { port: number }).port}`)).stdout).toBe(
            'OUTSIDE-OK\n',
          );
        // (not passt's gateway 10.0.2.2: with --no-map-gw that is an address beyond this machine, which a test never dials)
        const fenced = await sh('b1', `for h in 10.77.2.1 169.254.169.2 127.0.0.1; do echo | nc -w 3 $h ${port}; done; echo done`);
        expect(fenced.stdout).not.toContain('SECRET');
        expect(hits).toBe(0);
        // still its own network only
        expect((await sh('b1', `ping -c 1 -W 3 ${vm.a1.ip}`)).exitCode).not.toBe(0);
      } finally {
        out.close();
      }
    },
    300_000,
  );

  it('save clean state of a stopped VM, write on its disk, reset: what was written is gone, and a start boots and attests', async () => {
    const disk = (await c.get(vm.a2.id)).paths.volume!;
    const raw = join(state, 'first-sector.raw');
    const onDisk = () => {
      rmSync(raw, { force: true });
      execFileSync('qemu-img', ['dd', '-f', 'qcow2', '-O', 'raw', `if=${disk}`, `of=${raw}`, 'bs=512', 'count=1']);
      return readFileSync(raw, 'latin1');
    };
    await c.stop(vm.a2.id);
    await c.call('POST', `/vms/${vm.a2.id}/povdesk/save-clean`);
    // written after the save while the VM is stopped (qemu-io, into the qcow2 as the guest would): one boot fewer
    execFileSync('qemu-io', ['-f', 'qcow2', '-c', 'write -P 0x44 0 512', disk], { stdio: 'ignore' });
    expect(onDisk()).toContain('DDDDDDDD'); // kept until the reset takes it away
    const t0 = Date.now();
    const reset = await c.call<Povdesk>('POST', `/vms/${vm.a2.id}/povdesk/reset-clean`);
    const resetMs = Date.now() - t0;
    // saved while stopped: no memory, so the reset leaves a cold boot of the saved disks and says so
    expect(reset.state).toBe('stopped');
    expect(reset.povdesk.lastReset).toMatchObject({ memory: false, note: expect.stringMatching(/saved while stopped/) });
    expect(onDisk()).not.toContain('DDDDDDDD');
    await c.start(vm.a2.id);
    const back = await until(
      'a2 ready after the reset',
      async () => {
        const v = await c.get(vm.a2.id);
        return v.state === 'ready' && v;
      },
      240_000,
      1000,
    );
    expect(back.attestation.ready?.verified).toBe(true);
    expect((await sh('a2', 'head -c 5 /dev/vda | tr -d "\\0"')).stdout).toBe('');
    console.log(`reset of a stopped VM: ${resetMs} ms`);
  }, 240_000);

  it(
    'save clean state of a ready VM keeps its memory; a reset resumes it: what was written is gone and the VM is ready only after a ' +
      'fresh quote',
    async () => {
      await sh('a2', 'echo BEFORE-THE-SAVE > /root/kept'); // only in the guest's memory (its root is a RAM disk)
      const saved = await c.call<Povdesk>('POST', `/vms/${vm.a2.id}/povdesk/save-clean`);
      expect(saved.povdesk).toMatchObject({ cleanMemory: true, cleanNote: null });
      await until('a2 ready after the save', async () => (await c.get(vm.a2.id)).state === 'ready', 120_000, 250);
      const dirty = await sh(
        'a2',
        'echo IN-MEMORY > /root/dirty; echo DIRTY-ON-DISK | dd of=/dev/vda bs=512 conv=fsync 2>/dev/null; sync; cat /root/dirty; ' +
          'head -c 13 /dev/vda',
      );
      expect(dirty.stdout).toBe('IN-MEMORY\nDIRTY-ON-DISK');
      const t0 = Date.now();
      const since = new Date(t0 - 1000).toISOString(); // the record's times are the manager's clock, in ms
      const reset = await c.call<Povdesk>('POST', `/vms/${vm.a2.id}/povdesk/reset-clean`);
      expect(reset.povdesk.lastReset).toMatchObject({ memory: true, note: null });
      // resumed, not booted: gated again until its fresh quote verifies
      expect(reset.state).not.toBe('ready');
      expect(reset.attestation).toMatchObject({ userDataReleased: false });
      expect(reset.attestation.ready).toBeUndefined();
      const back = await until(
        'a2 ready after the memory reset',
        async () => {
          const v = await c.get(vm.a2.id);
          if (v.state === 'failed' || v.lastError) throw new Error(`a2: ${v.state} ${v.lastError}`);
          return v.state === 'ready' && v;
        },
        120_000,
        250,
      );
      const readyMs = Date.now() - t0;
      expect(back.attestation.ready?.verified).toBe(true);
      expect(back.attestation.ready!.at > since).toBe(true);
      expect(back.attestation.nonceIssuedAt! > since).toBe(true);
      expect(back.attestation.userDataReleased).toBe(true);
      // no boot happened: what the guest's memory held at the save is there, what was written after it is gone
      const after = await sh('a2', 'cat /root/kept; cat /root/dirty 2>&1; head -c 13 /dev/vda | tr -d "\\0"; echo');
      const [kept, file, disk] = after.stdout.trim().split('\n');
      expect(kept).toBe('BEFORE-THE-SAVE');
      expect(file).toMatch(/No such file/);
      expect(disk ?? '').toBe('');
      console.log(`reset of a ready VM from its saved memory: ready again in ${readyMs} ms`);
    },
    240_000,
  );

  it('the switch goes with the last VM, then the network can be deleted', async () => {
    await c.delete(vm.b1.id);
    await until('lab-b switch gone', () => !existsSync(join(state, 'networks', 'lab-b')), 10_000);
    expect(execFileSync('sh', ['-c', `ps -eo args | grep -c '[v]de_switch.*lab-b' || true`], { encoding: 'utf8' }).trim()).toBe('0');
    await c.call('DELETE', '/networks/lab-b');
    expect((await c.call<NetworkAnswer[]>('GET', '/networks')).map((n) => n.spec.name)).toEqual(['default', 'lab-a', 'nat']);
  });
});
