import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidsWith, stopManager } from '../support/manager';
import type { Subscriber } from '../../main/core/streams';
import { vmDiagnostics } from '../../main/core/diagnostics';
import type { VmConsoleChunk } from '../../shared/contract/vm';
import { removeHome, vmSkip } from './helpers';
import { testCore, type TestCore } from '../support/core';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { makeEnv, openShell, run } from '../ssh/harness';

const skip = vmSkip();
const key = generateEd25519('povdesk-vm-test');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T | null | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/**
 * vm.* through the real core's Dispatcher against the real vm-manager process (started by the supervisor), real QEMU + swtpm
 * + OVMF under TCG, the test image built by vm.imageBuildTest. One VM boots to ready; a second is
 * cancelled while booting.
 */
describe.skipIf(skip !== null)('vm handlers against the real vm-manager', () => {
  const home = mkdtempSync(join(tmpdir(), 'povdesk-vmh-'));
  let t: TestCore;
  const start = () => testCore({ home, env: { ...process.env } });
  let readyId = '';

  beforeAll(async () => {
    t = await start();
  });
  afterAll(async () => {
    await t?.close();
    await stopManager(home);
    removeHome(home);
  });

  it('host report: TCG chosen, with the warning when /dev/kvm is present but unusable; nothing missing', async () => {
    const host = await t.call('vm.host', {});
    expect(host.mode).toBe('local');
    expect(host.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect(host.missing).toEqual([]);
    expect(host.ready).toBe(true);
    expect(host.tools.every((t) => t.found)).toBe(true);
    if (host.accelerator.chosen === 'tcg' && existsSync('/dev/kvm')) {
      expect(host.accelerator.warning).toMatch(/kvm/i);
      expect(host.accelerator.probes.find((p) => p.accel === 'kvm')?.result).toBe('unusable');
    }
  });

  it('builds the test image as a job; the image list shows it', async () => {
    expect((await t.call('vm.images', {})).images).toEqual([]);
    const { jobId } = await t.call('vm.imageBuildTest', {});
    const job = await t.jobs.wait(jobId);
    expect(job.error).toBeNull();
    expect(job.state).toBe('succeeded');
    const { images } = await t.call('vm.images', {});
    expect(images.map((i) => i.name)).toEqual(['povdesk-test']);
    expect(images[0]!.hasPolicy).toBe(true);
    // The build made the reference measurements from the files (no boot): attested VMs of any size verify at once.
    expect(images[0]!.references).toMatch(
      /^made .* from the files: kernel [0-9a-f]{12}…, initrd [0-9a-f]{12}…, command line "console=ttyS0/,
    );
    expect(images[0]!.unpredictable).toBeNull();
    expect(images[0]!.goldenPcrs).toBe(0);
    expect(images[0]!.firmwareChanged).toBeNull();
    // made again from the files on request (after a firmware update, say): the same measurements
    const again = await t.call('vm.remakeReferences', { image: 'povdesk-test' });
    expect(again.image.references?.replace(/^made \S+ \S+/, '')).toBe(images[0]!.references!.replace(/^made \S+ \S+/, ''));
  }, 300_000);

  it(
    'golden values are refused for an image with references; for one without (the fallback) a learn job (one boot) proposes them ' +
      'and only vm.saveGolden saves them',
    async () => {
      const refused = await t.jobs.wait((await t.call('vm.learnGolden', { image: 'povdesk-test' })).jobId);
      expect(refused.state).toBe('failed');
      expect(refused.error).toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/has reference measurements made from its files/),
      });
      // an image made before reference measurements existed: the same files, a policy without them
      const images = join(home, 'vm-manager', 'images');
      cpSync(join(images, 'povdesk-test'), join(images, 'povdesk-legacy'), { recursive: true });
      const infoFile = join(images, 'povdesk-legacy', 'image.json');
      writeFileSync(infoFile, JSON.stringify({ ...(JSON.parse(readFileSync(infoFile, 'utf8')) as object), name: 'povdesk-legacy' }));
      const policyFile = join(images, 'povdesk-legacy', 'policy.json');
      const { references: _refs, ...legacy } = JSON.parse(readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
      writeFileSync(policyFile, JSON.stringify({ ...legacy, unpredictable: 'made before reference measurements existed' }));
      const before = (await t.call('vm.images', {})).images.find((i) => i.name === 'povdesk-legacy')!;
      expect(before).toMatchObject({ references: null, unpredictable: 'made before reference measurements existed', goldenPcrs: 0 });
      const { jobId } = await t.call('vm.learnGolden', { image: 'povdesk-legacy' });
      const job = await t.jobs.wait(jobId);
      expect(job.error).toBeNull();
      const learned = job.result as {
        image: string;
        golden: Record<string, string>;
        pcrs: Record<string, string>;
        firmware: { path: string; sha256: string } | null;
      };
      expect(learned.image).toBe('povdesk-legacy');
      expect(learned).toMatchObject({ cpus: 2, memoryMib: 2048 }); // no size given: the default one
      expect(Object.keys(learned.golden).sort((a, b) => +a - +b)).toEqual(['0', '2', '3', '4', '6', '7', '9']);
      expect(Object.keys(learned.pcrs)).toContain('11');
      expect(learned.firmware?.sha256).toMatch(/^[0-9a-f]{64}$/);
      // The learn VM is gone and nothing was written yet.
      expect((await t.call('vm.list', {})).vms.filter((v) => v.name.startsWith('learn-'))).toEqual([]);
      expect((await t.call('vm.images', {})).images.find((i) => i.name === 'povdesk-legacy')).toEqual(before);
      await expect(t.call('vm.saveGolden', { image: 'povdesk-legacy', golden: { '4': 'not-hex' }, firmware: null })).rejects.toMatchObject({
        code: 'invalid_request',
      });
      const saved = await t.call('vm.saveGolden', { image: 'povdesk-legacy', golden: learned.golden, firmware: learned.firmware });
      expect(saved.image.goldenPcrs).toBe(7);
      expect(saved.image.goldenSizes).toEqual([]);
      expect(saved.image.firmwareChanged).toBeNull();
    },
    400_000,
  );

  it("refuses bad input before the manager (schema) and keeps the manager's own refusals", async () => {
    const good = { name: 'ok', image: 'povdesk-test', cpus: 1, memoryMib: 512, diskGib: 1, requireAttestation: false };
    await expect(t.call('vm.create', { ...good, name: 'Not_A_Label' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(t.call('vm.create', { ...good, memoryMib: 0 })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(t.call('vm.create', { ...good, extra: 1 } as never)).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(t.call('vm.get', { id: 'deadbeef' })).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('deadbeef'),
    });
    const { jobId } = await t.call('vm.create', { ...good, image: 'no-such-image' });
    const job = await t.jobs.wait(jobId);
    expect(job.state).toBe('failed');
    // giantswarm's document: an image that does not exist is an invalid spec (400)
    expect(job.error?.code).toBe('invalid_request');
    expect(job.error?.message).toContain('no-such-image');
    expect((await t.call('vm.list', {})).vms).toEqual([]);
  });

  it('creates a VM and follows it to ready with progress per state; the console stream carries the file exactly', async () => {
    const seen: string[] = [];
    const off = t.jobs.onChange((j) => {
      if (j.kind === 'vm.create' && seen[seen.length - 1] !== j.progress.step) seen.push(j.progress.step);
    });
    const { jobId } = await t.call('vm.create', {
      name: 'ready-one',
      image: 'povdesk-test',
      cpus: 1,
      memoryMib: 512,
      diskGib: 1,
      requireAttestation: false,
      userData: `# keys for root\n${key.public}\n`,
    });
    const vm = await until(async () => (await t.call('vm.list', {})).vms.find((v) => v.name === 'ready-one'), 30_000, 'the VM record');
    readyId = vm.id;
    // subscribe, then follow (as the page does)
    const chunks: VmConsoleChunk[] = [];
    const sub: Subscriber = {
      unacked: new Map(),
      send: (_s, key, data, bytes) => {
        chunks.push(data as VmConsoleChunk);
        queueMicrotask(() => t.base.hub.ack(sub, 'vm.console', key, bytes));
      },
    };
    const unsubscribe = t.base.hub.subscribe('vm.console', vm.id, sub);
    const { text: tail } = await t.call('vm.consoleFollow', { id: vm.id, lines: 10_000 });
    const job = await t.jobs.wait(jobId);
    off();
    expect(job.error).toBeNull();
    expect(job.state).toBe('succeeded');
    const result = job.result as { vm: { state: string; durations: { readySeconds: number | null; bootSeconds: number | null } } };
    expect(result.vm.state).toBe('ready');
    expect(result.vm.durations.readySeconds).toBeGreaterThan(0);
    expect(seen).toContain('booting');
    expect(seen[seen.length - 1]).toBe('ready');
    // everything in the file by now arrives on the stream, in order, nothing twice
    const consoleFile = join(home, 'vm-manager', 'vms', vm.id, 'console.log');
    const file = readFileSync(consoleFile, 'utf8');
    const streamed = () => tail + chunks.map((c) => c.text).join('');
    await until(async () => streamed().length >= file.length, 5000, 'the stream to catch up with the file');
    unsubscribe();
    expect(chunks.some((c) => c.reset)).toBe(false);
    expect(streamed().startsWith(file)).toBe(true);
    expect(readFileSync(consoleFile, 'utf8').startsWith(streamed())).toBe(true);
    expect(file.length).toBeGreaterThan(100);

    const con = await t.call('vm.console', { id: vm.id, lines: 5 });
    expect(con.lines.length).toBeGreaterThan(0);
    expect(con.lines.length).toBeLessThanOrEqual(5);
    const att = await t.call('vm.attestation', { id: vm.id });
    expect(att.required).toBe(false);
    expect(att.userDataReleased).toBe(true);

    // SSH into the guest through its forwarded port, with the key its user-data listed.
    const { vm: ready } = job.result as { vm: { sshPort: number | null } };
    expect(ready.sshPort).toEqual(expect.any(Number));
    const env = makeEnv();
    try {
      const c = await openShell(env, ready.sshPort!, key.private, {
        username: 'root',
        context: () =>
          readFileSync(consoleFile, 'utf8')
            .split('\n')
            .filter((l) => /ssh|dropbear/.test(l))
            .join('\n'),
      });
      await run(env, c, 'echo in-guest-$((6*7)) $(cat /proc/sys/kernel/hostname)', /in-guest-42/, 20_000);
    } finally {
      env.dispose();
    }

    // exec through the manager (its own key, over SSH): output and exit code, non-zero is a result
    expect(await t.call('vm.exec', { id: vm.id, command: ['sh', '-c', 'echo exec-$((6*7))'] })).toMatchObject({
      stdout: 'exec-42\n',
      exitCode: 0,
    });
    expect(await t.call('vm.exec', { id: vm.id, command: ['sh', '-c', 'echo oops >&2; exit 3'] })).toMatchObject({
      stderr: 'oops\n',
      exitCode: 3,
    });
    // the guest's SSH port forwarded to this machine through the app's listener: the guest's banner answers
    const { forward } = await t.call('vm.forward', { id: vm.id, port: 22 });
    expect(forward.localAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    const banner = await new Promise<string>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port: Number(forward.localAddress.split(':')[1]) });
      s.once('data', (d) => (resolve(d.toString()), s.destroy()));
      s.once('error', reject);
    });
    expect(banner).toMatch(/^SSH-2\.0-/);
    expect((await t.call('vm.forwards', { id: vm.id })).forwards.map((f) => f.guestPort)).toEqual([22]);
    await t.call('vm.unforward', { forwardId: forward.id });
    expect((await t.call('vm.forwards', {})).forwards).toEqual([]);
  }, 300_000);

  it('a remote vm-manager (URL + bearer token in the keychain) works through the same client; its console is polled', async () => {
    const ep = JSON.parse(readFileSync(join(home, 'vm-manager', 'endpoint.json'), 'utf8')) as { url: string; token: string; pid: number };
    await expect(t.call('vm.setConnection', { mode: 'remote' })).rejects.toMatchObject({ code: 'invalid_request' });
    const conn = await t.call('vm.setConnection', { mode: 'remote', url: ep.url, token: ep.token });
    expect(conn).toMatchObject({ mode: 'remote', url: ep.url, tokenSet: true, pid: null });
    expect(await t.base.secrets.get('vm-manager-token')).toBe(ep.token);
    expect((await t.call('vm.host', {})).mode).toBe('remote');
    const remoteVms = (await t.call('vm.list', {})).vms;
    expect(remoteVms.map((v) => v.id)).toContain(readyId);
    // A remote manager's forwarded port is on its loopback, not ours.
    expect(remoteVms.find((v) => v.id === readyId)?.sshPort).toBeNull();

    t.services.vm.followers.closeAll();
    const unsubscribe = t.base.hub.subscribe('vm.console', readyId, { unacked: new Map(), send: () => undefined });
    const { text } = await t.call('vm.consoleFollow', { id: readyId, lines: 20 });
    unsubscribe();
    const { lines } = await t.call('vm.console', { id: readyId, lines: 20 });
    expect(text).toBe(lines.join('\r\n') + '\r\n');
    t.services.vm.followers.closeAll();

    await t.call('vm.setConnection', { mode: 'remote', token: 'not-the-token-at-all' });
    await expect(t.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', message: expect.stringContaining('bearer token') });
    const back = await t.call('vm.setConnection', { mode: 'local' });
    expect(back).toMatchObject({ mode: 'local', pid: ep.pid });

    const [title, body] = await vmDiagnostics(t.services.vm)();
    expect(title).toBe('vm-manager host report');
    expect(body).toMatch(/accelerator (kvm|tcg):/);
  });

  it('after the app core restarts, the same manager and the VM are still there', async () => {
    const before = await t.call('vm.connection', {});
    await t.restart();
    const { vms } = await t.call('vm.list', {});
    expect(vms.find((v) => v.id === readyId)?.state).toBe('ready');
    const after = await t.call('vm.connection', {});
    expect(after.pid).toBe(before.pid);
    expect(after.pid).not.toBeNull();
  });

  it("stop, a second stop refused with the manager's conflict message, delete", async () => {
    const { vm } = await t.call('vm.stop', { id: readyId });
    expect(vm.state).toBe('stopped');
    await expect(t.call('vm.stop', { id: readyId })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('stopped'),
    });
    await t.call('vm.delete', { id: readyId });
    await expect(t.call('vm.get', { id: readyId })).rejects.toMatchObject({ code: 'not_found' });
  }, 60_000);

  it('cancelling the create job while the VM boots deletes the half-made VM', async () => {
    const { jobId } = await t.call('vm.create', {
      name: 'cancel-me',
      image: 'povdesk-test',
      cpus: 1,
      memoryMib: 512,
      diskGib: 1,
      requireAttestation: true,
    });
    await until(async () => t.jobs.get(jobId)?.progress.step === 'booting', 30_000, 'booting');
    const id = (await t.call('vm.list', {})).vms.find((v) => v.name === 'cancel-me')!.id;
    t.jobs.cancel(jobId);
    const job = await t.jobs.wait(jobId);
    expect(job.state).toBe('cancelled');
    expect(job.error?.message).toContain('was deleted');
    expect((await t.call('vm.list', {})).vms).toEqual([]);
    expect(pidsWith(join(home, 'vm-manager', 'vms', id))).toEqual([]);
  }, 60_000);
});
