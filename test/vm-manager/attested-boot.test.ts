/**
 * Real boots under TCG with OVMF + swtpm: learn golden values from one VM, write them with
 * `image golden`, then a fresh manager verifies both quotes against them. A VM that never quotes
 * never gets its user-data; another command line or initrd is a golden mismatch on PCR 9.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVmManagerCli } from '../../main/vm-manager/cli';
import { TestClient as VmManagerClient } from './support';
import { findOvmf } from '../../main/vm-manager/host';
import { buildTestImage, readPolicy, TEST_CMDLINE, TEST_IMAGE, writePolicy } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { pidsWith, repo, stateWithImage, until, vmSkip } from './support';
import { firstLine } from '../support/net';

const skip = vmSkip();
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

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

describe.skipIf(skip !== null)('attested boot of the test image (real QEMU/TCG, OVMF, swtpm)', () => {
  let state: string;
  let m: RunningManager | null = null;
  let client: VmManagerClient;
  let firstVm = '';
  let firstAk = '';

  beforeAll(() => {
    state = stateWithImage('vmm-att-');
  });
  afterAll(async () => {
    await m?.close({ stopVms: true });
    for (const id of m?.vms.list().map((v) => v.id) ?? []) await m?.vms.delete(id).catch(() => {});
    expect(pidsWith(state)).toEqual([]);
    rmSync(state, { recursive: true, force: true });
  });

  it('learn mode: boots to ready with require_attestation, both quotes verify, user-data only after the initrd quote', async () => {
    m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
    client = new VmManagerClient(m.url, 'tok');
    const vm = await client.create({ name: 'learn', user_data: 'hello-user-data', require_attestation: true, wait_for: 'ready' });
    firstVm = vm.id;
    expect(vm.state).toBe('ready');
    expect(vm.attestation.initrd?.verified).toBe(true);
    expect(vm.attestation.ready?.verified).toBe(true);
    expect(vm.attestation.userDataReleased).toBe(true);
    expect(vm.povdesk.attestation.akFingerprint).toMatch(/^[0-9a-f]{64}$/);
    firstAk = vm.povdesk.attestation.akFingerprint ?? '';
    expect(vm.povdesk.durations.readySeconds).toBeGreaterThan(0);
    const con = (await client.console(vm.id, 200)).console.split('\n');
    const iQuote = con.findIndex((l) => l.includes('povdesk-agent: quote initrd verified'));
    const iUd = con.findIndex((l) => l.includes(`povdesk-agent: user-data 15 bytes sha256 ${sha('hello-user-data')}`));
    expect(iQuote).toBeGreaterThanOrEqual(0);
    expect(iUd).toBeGreaterThan(iQuote);
    expect(con.some((l) => l.startsWith('povdesk-agent: READY (t='))).toBe(true);
    // The SSH forward: the host's 127.0.0.1 port reaches the guest's SSH server (dropbear).
    expect(vm.povdesk.ports.ssh).toEqual(expect.any(Number));
    expect(await firstLine(vm.povdesk.ports.ssh!)).toMatch(/^SSH-2\.0-dropbear/);
    // `image golden` writes the verified ready-stage PCRs (PCR 9 included) into policy.json
    const out: string[] = [];
    expect(await runVmManagerCli(['image', 'golden', TEST_IMAGE, '--from-vm', vm.id, '--state-dir', state], (s) => out.push(s), (s) => out.push(s))).toBe(0);
    const golden = readPolicy(join(state, 'images', TEST_IMAGE))!.golden.sha256;
    expect(Object.keys(golden).sort((a, b) => +a - +b)).toEqual(['0', '2', '3', '4', '6', '7', '9']);
    expect(golden['9']).toBe(vm.povdesk.attestation.ready?.pcrs['9']);
    // stop: QMP powerdown reaches the guest's acpid, so no SIGTERM is needed
    const stopped = await client.stop(vm.id);
    expect(stopped.state).toBe('stopped');
    expect(stopped.lastError).toBeUndefined(); // optional in the document: absent, never null
    expect(stopped.povdesk.ports.ssh).toBeNull();
    expect(pidsWith(join(state, 'vms', vm.id))).toEqual([]);
    await m.close();
    m = null;
  }, 180_000);

  it('a fresh manager verifies against the golden values; the swtpm state and the pinned AK survive a stop/start', async () => {
    m = await serve({ stateDir: state, token: 'tok' });
    client = new VmManagerClient(m.url, 'tok');
    expect(m.recovered).toEqual({ reattached: [], cleaned: [] });
    expect((await client.get(firstVm)).state).toBe('stopped');
    await client.start(firstVm);
    const vm = await m.vms.waitFor(firstVm, 'ready', 150_000);
    expect(vm.attestation.initrd).toMatchObject({ verified: true, mismatches: [], learned: {} });
    expect(vm.attestation.ready).toMatchObject({ verified: true, mismatches: [] });
    expect(vm.attestation.akFingerprint).toBe(firstAk);
    const att = await client.attestation(firstVm);
    const row9 = att.povdesk.table.find((r) => r.pcr === '9');
    expect(row9).toMatchObject({ compared: true, match: true });
    expect(att.povdesk.table.find((r) => r.pcr === '1')).toMatchObject({ compared: false });
    // reboot: a new boot, new quotes, the same pinned AK
    const qemuPid = vm.pids.qemu;
    const rebooting = await client.reboot(firstVm);
    expect(rebooting.state).toBe('booting');
    expect(rebooting.attestation.initrd).toBeUndefined();
    const again = await m.vms.waitFor(firstVm, 'ready', 150_000);
    expect(again.pids.qemu).toBe(qemuPid);
    expect(again.attestation.initrd?.verified).toBe(true);
    expect(again.attestation.ready?.verified).toBe(true);
    expect(again.attestation.akFingerprint).toBe(firstAk);
    await client.delete(firstVm);
    expect(pidsWith(join(state, 'vms', firstVm))).toEqual([]);
  }, 240_000);

  it('a VM that never quotes never gets its user-data', async () => {
    const init = readFileSync(join(repo, 'main', 'vm-manager', 'guest', 'init.sh'), 'utf8');
    const silent = init.replace(/^quote initrd$/m, 'say "this variant never quotes"').replace(/&& quote initrd$/m, '&& :');
    expect(silent).not.toBe(init);
    buildTestImage(state, { name: 'povdesk-silent', initScript: silent, ovmfCode: findOvmf()!.code });
    m!.vms.timeouts.bootMs = 45_000; // this VM's boot timer: it ends up "running" with the reason (45 s: a loaded TCG host takes over 20 s to print)
    // 1 CPU / 512 MiB: at the document's default size the TCG boot may not reach the user-data loop within the 20 s timer
    const vm = await client.create({ name: 'silent', image: 'povdesk-silent', user_data: 'top-secret', require_attestation: true, wait_for: 'none', cpus: 1, memory_mib: 512 });
    m!.vms.timeouts.bootMs = 240_000;
    await until('the guest asking for user-data twice', async () => {
      const c = (await client.console(vm.id, 50)).console;
      return (c.match(/user-data not released yet \(status 503\)/g) ?? []).length >= 2 || null;
    }, 120_000, 500);
    const rec = await client.get(vm.id);
    expect(rec.attestation.userDataReleased).toBe(false);
    expect(rec.attestation.initrd).toBeUndefined();
    const answer = await askAs(join(state, 'metadata.sock'), vm.id, '/skytap/vms/self/user_data');
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer).toMatch(/Retry-After: 2/i);
    expect(answer).not.toContain('top-secret');
    expect(await askAs(join(state, 'metadata.sock'), vm.id, '/skytap')).not.toContain('top-secret');
    expect((await client.console(vm.id, 500)).console).not.toContain(sha('top-secret'));
    const timedOut = await until('the boot timeout', async () => {
      const r = await client.get(vm.id);
      return r.state === 'running' ? r : null;
    }, 60_000, 500);
    expect(timedOut.lastError).toMatch(/^no READY within 45 s: attestation did not verify, so user-data was withheld \(no initrd quote arrived\)/);
    expect(timedOut.lastError).toMatch(/user-data not released yet/); // the console tail
    await client.delete(vm.id);
  }, 180_000);

  for (const variant of ['cmdline', 'initrd'] as const) {
    it(`another ${variant} is a golden mismatch: the initrd quote is rejected and user-data withheld`, async () => {
      const base = readPolicy(join(state, 'images', TEST_IMAGE))!;
      const name = `povdesk-${variant}`;
      const init = readFileSync(join(repo, 'main', 'vm-manager', 'guest', 'init.sh'), 'utf8');
      buildTestImage(state, {
        name, ovmfCode: findOvmf()!.code,
        ...(variant === 'cmdline' ? { cmdline: `${TEST_CMDLINE} povdesk.variant=1` } : { initScript: `${init}\n# a changed initrd\n` }),
      });
      const dir = join(state, 'images', name);
      writePolicy(dir, { ...readPolicy(dir)!, golden: base.golden });
      const vm = await client.create({ name: `var-${variant}`, image: name, user_data: 'withheld', require_attestation: true, wait_for: 'none' });
      const rec = await until('the initrd verdict', async () => {
        const r = await client.get(vm.id);
        return r.attestation.initrd ? r : null;
      }, 120_000, 500);
      const i = rec.povdesk.attestation.initrd!;
      expect(i.verified).toBe(false);
      expect(i.failed).toBe('golden');
      expect(i.message).toMatch(/golden mismatch: (pcr \d+ expected [0-9a-f]{64}, got [0-9a-f]{64}; )*pcr 9 expected [0-9a-f]{64}, got [0-9a-f]{64}/);
      const changed = i.mismatches.map((x) => x.pcr);
      console.log(`[finding] ${variant} change moved golden-compared PCRs: ${changed.join(', ')}`);
      expect(changed).toContain('9');
      expect(rec.attestation.userDataReleased).toBe(false);
      const answer = await askAs(join(state, 'metadata.sock'), vm.id, '/skytap/vms/self/user_data');
      expect(answer).toMatch(/^HTTP\/1\.1 503/);
      await client.delete(vm.id);
      expect(pidsWith(join(state, 'vms', vm.id))).toEqual([]);
    }, 180_000);
  }

  // Golden values hold for the learn boot's size (GOLDEN_VM_SIZE): the PCRs move with memory (0
  // and 4 here) and with the CPU count (0), and the verdict says so, with what to do.
  for (const size of [{ cpus: 2, memory_mib: 1024, said: '2 CPUs and 1024 MiB' }, { cpus: 1, memory_mib: 2048, said: '1 CPU and 2048 MiB' }]) {
    it(`an attested VM of ${size.said} is a golden mismatch that names the size as the reason`, async () => {
      const vm = await client.create({ name: `size-${size.cpus}-${size.memory_mib}`, user_data: 'withheld', require_attestation: true, wait_for: 'none', cpus: size.cpus, memory_mib: size.memory_mib });
      const rec = await until('the initrd verdict', async () => {
        const r = await client.get(vm.id);
        return r.attestation.initrd ? r : null;
      }, 120_000, 500);
      const i = rec.povdesk.attestation.initrd!;
      console.log(`[finding] ${size.said} moved golden-compared PCRs: ${i.mismatches.map((x) => x.pcr).join(', ') || 'none'}`);
      expect(i.verified).toBe(false);
      expect(i.failed).toBe('golden');
      expect(i.message).toContain(`the PCRs move with the VM's size: at ${size.said} the quotes will not match`);
      expect(rec.attestation.userDataReleased).toBe(false);
      await client.delete(vm.id);
    }, 180_000);
  }

  // The way out for another size: a learn boot at that size (POST learn-golden {cpus, memory_mib})
  // and its values saved for it (golden_sizes), beside the default size's, which do not change.
  it('a learn boot at 2 CPUs and 1024 MiB gives that size its own golden values: such a VM verifies, the default values stay', async () => {
    const policyFile = join(state, 'images', TEST_IMAGE, 'policy.json');
    const before = readPolicy(join(state, 'images', TEST_IMAGE))!;
    const learned = await client.call<{ cpus: number; memoryMiB: number; golden: Record<string, string>; firmware: { path: string; sha256: string } | null }>(
      'POST', `/images/${TEST_IMAGE}/learn-golden`, { cpus: 2, memory_mib: 1024 },
    );
    expect(learned).toMatchObject({ cpus: 2, memoryMiB: 1024 });
    // the PCRs the size moves differ from the default size's, the others do not
    const moved = Object.keys(learned.golden).filter((k) => learned.golden[k] !== before.golden.sha256[k]);
    console.log(`[finding] a learn boot at 2 CPUs and 1024 MiB moved PCRs ${moved.join(', ')}`);
    expect(moved).toContain('4');
    expect(JSON.parse(readFileSync(policyFile, 'utf8'))).toEqual(JSON.parse(JSON.stringify(before))); // nothing saved yet
    await client.call('PUT', `/images/${TEST_IMAGE}/golden`, { golden: learned.golden, firmware: learned.firmware, cpus: 2, memory_mib: 1024 });
    const after = readPolicy(join(state, 'images', TEST_IMAGE))!;
    expect(after.golden).toEqual(before.golden);
    expect(after.golden_sizes).toEqual({ '2x1024': { sha256: learned.golden } });

    const vm = await client.create({ name: 'size-2-1024-learned', user_data: 'sized', require_attestation: true, wait_for: 'ready', cpus: 2, memory_mib: 1024 });
    expect(vm.state).toBe('ready');
    expect(vm.attestation.initrd?.verified).toBe(true);
    expect(vm.attestation.ready?.verified).toBe(true);
    expect(vm.attestation.userDataReleased).toBe(true);
    // its PCR table compares against its own size's values
    const att = await client.attestation(vm.id);
    expect(att.povdesk.table.find((r) => r.pcr === '4')).toMatchObject({ golden: learned.golden['4'], match: true });
    await client.delete(vm.id);
  }, 300_000);
});

