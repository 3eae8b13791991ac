/**
 * Real boots of the test image under TCG with OVMF + swtpm, attesting against the reference
 * measurements `image build-test` made from its files (no learn boot anywhere but the fallback's):
 * VMs of 1 CPU / 256 MiB and 2 CPUs / 4096 MiB verify both quotes (2 CPUs / 2048 MiB, the
 * default size, is trust.test.ts's VM); the log the guest sent replays to its quote for
 * tpm2_eventlog too and tpm2_checkquote accepts the quote; the pinned AK survives a stop/start in
 * a fresh manager and a reboot re-gates. A kernel changed by one byte after the references were
 * made: the quote verifies, the event check names the event, and the user-data stays withheld. A VM that never
 * quotes never gets its user-data. Golden values remain the fallback for an image without
 * references, and are refused for one with them.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClient as VmManagerClient } from './support';
import { findOvmf } from '../../main/vm-manager/host';
import { readPolicy, TEST_IMAGE, writePolicy } from '../../main/vm-manager/images';
import { buildTestImage, TEST_CMDLINE } from '../../main/vm-manager/test-image';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { copyTestImage, pidsWith, repo, stateWithImage, until, vmSkip } from './support';
import { firstLine } from '../support/net';
import { checkquote, type WireBody } from './attest/harness';
import { eventlogReplay } from './attest/eventlog-tools';

const skip = vmSkip();

/** Asks the metadata socket as VM `id` would (through the proxy's preamble). */
function askAs(sock: string, id: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(sock);
    let out = '';
    c.on('connect', () => c.write(`POVDESK-VM ${id}\nGET ${path} HTTP/1.0\r\nHost: x\r\n\r\n`));
    c.on('data', (d) => (out += String(d)));
    c.on('end', () => resolve(out));
    c.on('error', reject);
  });
}

describe.skipIf(skip !== null)('attested boots of the test image at any size (real QEMU/TCG, OVMF, swtpm)', () => {
  let state: string;
  let m: RunningManager | null = null;
  let client: VmManagerClient;

  beforeAll(async () => {
    state = stateWithImage('vmm-att-');
    m = await serve({ stateDir: state, token: 'tok' });
    client = new VmManagerClient(m.url, 'tok');
  });
  /** The test image under another name (image.json names it), its references as they were made. */
  const copyImage = (name: string) => copyTestImage(state, name);
  afterAll(async () => {
    await m?.close({ stopVms: true });
    for (const id of m?.vms.list().map((v) => v.id) ?? []) await m?.vms.delete(id).catch(() => {});
    expect(pidsWith(state)).toEqual([]);
    rmSync(state, { recursive: true, force: true });
  });

  it('the test image has reference measurements from its files, no golden values; Image.policy and the image view show them', async () => {
    const policy = readPolicy(join(state, 'images', TEST_IMAGE))!;
    expect(policy.golden.sha256).toEqual({});
    expect(policy.unpredictable).toBeUndefined();
    expect(policy.references?.boot).toMatchObject({ kind: 'kernel', cmdline: TEST_CMDLINE, loader: 'qemu-x86-linux-q35' });
    expect(policy.references?.firmware.volumes.map((v) => v.pei)).toEqual([true, false]);
    const image = await client.call<{
      policy: { references: unknown };
      povdesk: { policy: { references: { boot: { kind: string; cmdline: string } } } };
    }>('GET', `/images/${TEST_IMAGE}`);
    expect(image.policy.references).toEqual(JSON.parse(JSON.stringify(policy.references)));
    expect(image.povdesk.policy.references.boot).toMatchObject({ kind: 'kernel', cmdline: TEST_CMDLINE });
  });

  for (const size of [{ cpus: 2, memory_mib: 4096 }]) {
    it(`a VM of ${size.cpus} CPU(s) / ${size.memory_mib} MiB is ready with both quotes verified against the references`, async () => {
      const vm = await client.create({
        name: `size-${size.cpus}-${size.memory_mib}`,
        user_data: 'sized',
        require_attestation: true,
        wait_for: 'ready',
        ...size,
      });
      expect(vm.state).toBe('ready');
      expect(vm.attestation).toMatchObject({ userDataReleased: true, initrd: { verified: true }, ready: { verified: true } });
      for (const stage of ['initrd', 'ready'] as const) {
        const s = vm.povdesk.attestation[stage]!;
        expect(s.events, `${stage}: ${s.message}`).toMatchObject({ mismatch: null });
        expect(s.events!.count).toBeGreaterThan(20);
        expect(s.message).toMatch(
          /quote verified; event log replayed \(\d+ events: \d+ checked against the references, \d+ allowed by type\)$/,
        );
      }
      await client.delete(vm.id);
    }, 240_000);
  }

  it(
    '1 CPU / 256 MiB: verified; tpm2_eventlog and tpm2_checkquote agree with what the guest sent; the pinned AK survives stop/start ' +
      'in a fresh manager; a reboot re-gates',
    async () => {
      const vm = await client.create({
        name: 'main',
        user_data: 'hello-user-data',
        require_attestation: true,
        wait_for: 'ready',
        cpus: 1,
        memory_mib: 256,
      });
      expect(vm.state).toBe('ready');
      expect(vm.attestation).toMatchObject({ userDataReleased: true, initrd: { verified: true }, ready: { verified: true } });
      for (const stage of ['initrd', 'ready'] as const)
        expect(vm.povdesk.attestation[stage]!.events, vm.povdesk.attestation[stage]!.message).toMatchObject({ mismatch: null });
      const ak = vm.povdesk.attestation.akFingerprint;
      expect(ak).toMatch(/^[0-9a-f]{64}$/);
      expect(await firstLine(vm.povdesk.ports.ssh!)).toMatch(/^SSH-2\.0-dropbear/);
      // The ready quote's body as the guest sent it (guest-quote.sh keeps the last one), checked by tpm2-tools.
      const sent = await client.exec(vm.id, ['cat', '/run/attest/last-quote.ready.json']);
      expect(sent.exitCode, sent.stderr).toBe(0);
      const body = JSON.parse(sent.stdout) as WireBody;
      expect(body.event_log).toMatch(/^[A-Za-z0-9+/]+=*$/);
      const dir = join(state, 'cross-check');
      expect(await checkquote(dir, body)).toBe(true);
      writeFileSync(join(dir, 'events.bin'), Buffer.from(body.event_log!, 'base64'));
      const theirs = await eventlogReplay(join(dir, 'events.bin'));
      const list = body.pcr_list
        .split(',')
        .map(Number)
        .sort((a, b) => a - b);
      const values = Buffer.from(body.pcrs, 'base64');
      list.forEach((p, i) => {
        if (p === 11 || p === 13) return; // the guest's own extends, not in the firmware's log
        expect(theirs[String(p)] ?? '00'.repeat(32), `PCR ${p}`).toBe(values.subarray(i * 32, i * 32 + 32).toString('hex'));
      });
      // the attestation view: every compared PCR matches the log's replay
      const att = await client.attestation(vm.id);
      expect(att.povdesk.references).toBe(true);
      expect(att.povdesk.table.find((r) => r.pcr === '4')).toMatchObject({ compared: true, match: true, golden: null });
      expect(att.povdesk.table.find((r) => r.pcr === '11')).toMatchObject({ compared: false });

      expect((await client.stop(vm.id)).state).toBe('stopped');
      await m!.close();
      m = await serve({ stateDir: state, token: 'tok' });
      client = new VmManagerClient(m.url, 'tok');
      await client.start(vm.id);
      const again = await m.vms.waitFor(vm.id, 'ready', 180_000);
      expect(again.attestation.initrd).toMatchObject({ verified: true, mismatches: [], learned: {} });
      expect(again.attestation.akFingerprint).toBe(ak);
      const rebooting = await client.reboot(vm.id);
      expect(rebooting.attestation.initrd).toBeUndefined();
      const rebooted = await m.vms.waitFor(vm.id, 'ready', 180_000);
      expect(rebooted.attestation.initrd?.verified).toBe(true);
      expect(rebooted.attestation.ready?.verified).toBe(true);
      expect(rebooted.attestation.akFingerprint).toBe(ak);
      await client.delete(vm.id);
      expect(pidsWith(join(state, 'vms', vm.id))).toEqual([]);
    },
    420_000,
  );

  it('a VM that never quotes never gets its user-data', async () => {
    const init = readFileSync(join(repo, 'main', 'vm-manager', 'guest', 'init.sh'), 'utf8');
    const silent = init.replace(/^quote initrd$/m, 'say "this variant never quotes"').replace(/&& quote initrd$/m, '&& :');
    expect(silent).not.toBe(init);
    buildTestImage(state, { name: 'povdesk-silent', initScript: silent, ovmfCode: findOvmf()!.code });
    // this VM's boot timer: it ends up "running" with the reason (45 s: a loaded TCG host takes over 20 s to print)
    m!.vms.timeouts.bootMs = 45_000;
    // 1 CPU / 512 MiB: at the document's default size the TCG boot may not reach the user-data loop within the 20 s timer
    const vm = await client.create({
      name: 'silent',
      image: 'povdesk-silent',
      user_data: 'top-secret',
      require_attestation: true,
      wait_for: 'none',
      cpus: 1,
      memory_mib: 512,
    });
    m!.vms.timeouts.bootMs = 240_000;
    await until(
      'the guest asking for user-data twice',
      async () => {
        const c = (await client.console(vm.id, 50)).console;
        return (c.match(/user-data not released yet \(status 503\)/g) ?? []).length >= 2 || null;
      },
      120_000,
      500,
    );
    const rec = await client.get(vm.id);
    expect(rec.attestation.userDataReleased).toBe(false);
    expect(rec.attestation.initrd).toBeUndefined();
    const answer = await askAs(join(state, 'metadata.sock'), vm.id, '/skytap/vms/self/user_data');
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer).toMatch(/Retry-After: 2/i);
    expect(answer).not.toContain('top-secret');
    expect(await askAs(join(state, 'metadata.sock'), vm.id, '/skytap')).not.toContain('top-secret');
    const timedOut = await until(
      'the boot timeout',
      async () => {
        const r = await client.get(vm.id);
        return r.state === 'running' ? r : null;
      },
      60_000,
      500,
    );
    expect(timedOut.lastError).toMatch(
      /^no READY within 45 s: attestation did not verify, so user-data was withheld \(no initrd quote arrived\)/,
    );
    await client.delete(vm.id);
  }, 180_000);

  // One byte of the kernel changed after its references were made (the references stay). The
  // same for an initrd or a command line is eventlog.test.ts's, on a recorded boot's log in a real
  // swtpm: the path from the verdict to the withheld user-data is this one.
  const tampered: { what: string; change: (dir: string) => void; type: string; pcr: number; expected: RegExp }[] = [
    {
      what: 'a kernel',
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      pcr: 4,
      expected: /^the kernel vmlinuz the references were made from \(sha256 [0-9a-f]{64}\); the file is now sha256 [0-9a-f]{64}$/,
      change: (dir) => {
        // the last character of the kernel's version string (setup header, informational only)
        const k = readFileSync(join(dir, 'vmlinuz'));
        const at = 0x200 + k.readUInt16LE(0x20e);
        const end = k.indexOf(0, at) - 1;
        k[end] = k[end] === 0x58 ? 0x59 : 0x58;
        writeFileSync(join(dir, 'vmlinuz'), k);
      },
    },
  ];
  for (const t of tampered) {
    it(
      `${t.what} changed by one byte after the references were made: the quote verifies, the event check names the event, user-data ` +
        `stays withheld`,
      async () => {
        const name = `povdesk-${t.what.split(' ')[1]!.replace(/\W/g, '')}`;
        const dir = join(state, 'images', name);
        copyImage(name);
        t.change(dir);
        const vm = await client.create({
          name: `tamper-${name.slice(8)}`,
          image: name,
          user_data: 'withheld',
          require_attestation: true,
          wait_for: 'none',
          cpus: 1,
          memory_mib: 256,
        });
        const rec = await until(
          'the initrd verdict',
          async () => {
            const r = await client.get(vm.id);
            return r.attestation.initrd ? r : null;
          },
          150_000,
          500,
        );
        const i = rec.povdesk.attestation.initrd!;
        expect(i.verified).toBe(false);
        expect(i.failed, i.message).toBe('event'); // every check before it passed: the quote is genuine
        expect(i.events?.mismatch).toMatchObject({ type: t.type, pcr: t.pcr });
        expect(i.events!.mismatch!.expected).toMatch(t.expected);
        expect(i.events!.mismatch!.seen).toMatch(/^[0-9a-f]{64}$/);
        expect(i.message).toContain(`(${t.type}, PCR ${t.pcr}) does not match the image's reference measurements`);
        console.log(`[finding] ${t.what} changed: ${i.message}`);
        expect(rec.attestation.userDataReleased).toBe(false);
        expect(await askAs(join(state, 'metadata.sock'), vm.id, '/skytap/vms/self/user_data')).toMatch(/^HTTP\/1\.1 503/);
        // the API's attestation answer names it too
        const att = await client.attestation(vm.id);
        expect(att.povdesk.initrd?.events?.mismatch).toMatchObject({ type: t.type, pcr: t.pcr });
        await client.delete(vm.id);
        expect(pidsWith(join(state, 'vms', vm.id))).toEqual([]);
      },
      240_000,
    );
  }

  it('golden values stay the fallback for an image without references, and are refused for one with them', async () => {
    await expect(client.call('POST', `/images/${TEST_IMAGE}/learn-golden`, {})).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/has reference measurements made from its files/),
    });
    // an image made before reference measurements: no `references` in its policy
    const dir = copyImage('povdesk-legacy');
    const { references: _refs, ...legacy } = readPolicy(dir)!;
    writePolicy(dir, { ...legacy, unpredictable: 'made before reference measurements existed' });
    const learned = await client.call<{ golden: Record<string, string>; firmware: { path: string; sha256: string } | null }>(
      'POST',
      '/images/povdesk-legacy/learn-golden',
      {},
    );
    expect(Object.keys(learned.golden).sort((a, b) => +a - +b)).toEqual(['0', '2', '3', '4', '6', '7', '9']);
    await client.call('PUT', '/images/povdesk-legacy/golden', { golden: learned.golden, firmware: learned.firmware });
    const vm = await client.create({
      name: 'legacy',
      image: 'povdesk-legacy',
      user_data: 'old',
      require_attestation: true,
      wait_for: 'ready',
    });
    expect(vm.attestation.ready?.verified).toBe(true);
    expect(vm.povdesk.attestation.initrd?.events ?? null).toBeNull(); // checked against golden values, not the log
    await client.delete(vm.id);
  }, 300_000);
});
