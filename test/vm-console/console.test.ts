import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopManager } from '../support/manager';
import { runnerScript } from '../../main/services/control-node/runner';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import type { HostKeyPrompt, SshStatus } from '../../shared/contract/ssh';
import { Consumer, Recorder, waitFor } from '../ssh/harness';
import { removeHome, vmSkip } from '../vm/helpers';
import { testCore, type TestCore } from '../support/core';
import { cachedImageDir } from '../vm-manager/support';

const skip = vmSkip();
/** Every file under dir except those below `skip`. */
function filesUnder(dir: string, skip: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (p === skip) return [];
    return e.isDirectory() ? filesUnder(p, skip) : e.isFile() ? [p] : [];
  });
}

/**
 * A local VM's serial console as a terminal, and SSH into it with the vm-manager's key: the real vm-manager (from source) started by the
 * supervisor, real QEMU + swtpm + OVMF under TCG, the busybox test image whose serial line offers
 * a shell after READY. Interactive through QEMU's serial socket, read-only through the log tail.
 * The VM requires attestation, so its SSH host key is the manager-made one the app pre-trusts.
 */
describe.skipIf(skip !== null)('local VM serial console', () => {
  const home = mkdtempSync(join(tmpdir(), 'povdesk-vmc-'));
  let t: TestCore;
  let statuses: Recorder<SshStatus>;
  let prompts: Recorder<HostKeyPrompt>;
  let vmId = '';
  let interactiveId = '';
  const size = { cols: 100, rows: 30 };

  beforeAll(async () => {
    // The built test image from the shared cache, staged where the manager keeps its images.
    const images = join(home, 'vm-manager', 'images');
    mkdirSync(images, { recursive: true });
    cpSync(cachedImageDir(), join(images, TEST_IMAGE), { recursive: true });
    // Run the manager from these sources even when an out/ build exists beside them.
    t = await testCore({ home, env: { ...process.env, POVDESK_FROM_SOURCE: '1' } });
    statuses = new Recorder<SshStatus>(t.base.hub, 'ssh.status');
    prompts = new Recorder<HostKeyPrompt>(t.base.hub, 'ssh.hostKeyPrompt');
  });
  afterAll(async () => {
    await t?.close();
    await stopManager(home);
    removeHome(home);
  });

  it('refuses an unknown VM with not_found and bad arguments with invalid_request', async () => {
    await expect(t.call('ssh.openVmConsole', { vmId: 'deadbeef', ...size })).rejects.toMatchObject({ code: 'not_found' });
    await expect(t.call('ssh.openVmConsole', { vmId: 'a b', ...size })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(t.call('ssh.openVmConsole', { vmId: 'x', extra: 1, ...size } as never)).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(t.call('ssh.openVmSsh', { vmId: 'deadbeef', ...size })).rejects.toMatchObject({ code: 'not_found' });
    await expect(t.call('ssh.openVmSsh', { vmId: 'a b', ...size })).rejects.toMatchObject({ code: 'invalid_request' });
  }, 60_000);

  it('a VM reaches ready; the interactive console runs a command and echo comes back', async () => {
    const { jobId } = await t.call('vm.create', {
      name: 'console-one',
      image: TEST_IMAGE,
      cpus: 1,
      memoryMib: 512,
      diskGib: 1,
      requireAttestation: true,
    });
    const job = await t.jobs.wait(jobId);
    expect(job.error).toBeNull();
    const rec = (job.result as { vm: { id: string; state: string } }).vm;
    expect(rec.state).toBe('ready');
    vmId = rec.id;

    const { sessionId } = await t.call('ssh.openVmConsole', { vmId, interactive: true, ...size });
    interactiveId = sessionId;
    const c = new Consumer(t.base.hub, sessionId);
    await waitFor('open', () => statuses.items.find((s) => s.sessionId === sessionId && s.state === 'open'));
    expect(statuses.items.find((s) => s.sessionId === sessionId)?.interactive).toBe(true);
    await t.call('ssh.input', { sessionId, data: '\r' });
    await waitFor('the shell prompt', () => c.text.includes('povdesk-test# '), 20_000);
    await t.call('ssh.input', { sessionId, data: 'echo hello-$((6*7))\r' });
    await waitFor('the command output', () => /\nhello-42\r?\n/.test(c.text), 20_000);
    // QEMU's serial socket takes one client: a second interactive console is refused with the reason
    await expect(t.call('ssh.openVmConsole', { vmId, interactive: true, ...size })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('already open'),
    });
    // the console log still receives everything the guest prints (the chardev logs it)
    const log = readFileSync(join(home, 'vm-manager', 'vms', vmId, 'console.log'), 'utf8');
    expect(log).toContain('povdesk-agent: READY');
    expect(log).toMatch(/\nhello-42\r?\n/);
  }, 240_000);

  it(
    "SSH into the VM signs in as root with the vm-manager's key and the pre-trusted host key: no question, no key outside the " +
      "manager's state",
    async () => {
      const opened = await t.call('ssh.openVmSsh', { vmId, ...size });
      expect(opened.title).toBe('root@console-one');
      const { sessionId } = opened;
      const c = new Consumer(t.base.hub, sessionId);
      await waitFor(
        () => `open (${JSON.stringify(statuses.items.filter((s) => s.sessionId === sessionId).at(-1))})`,
        () => statuses.items.find((s) => s.sessionId === sessionId && s.state === 'open'),
        60_000,
      );
      expect(prompts.items).toEqual([]);
      await t.call('ssh.input', { sessionId, data: 'echo key-$((6*7)) uid-$(id -u)\r' });
      await waitFor('the command output over SSH', () => /key-42 uid-0/.test(c.text), 20_000);
      await t.call('ssh.close', { sessionId });

      // the private key is in the manager's state only (0600): not in the app's database, logs or settings
      const keyFile = join(home, 'vm-manager', 'vms', vmId, 'manager_ed25519_key');
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const secret = readFileSync(keyFile, 'utf8').split('\n')[1]!;
      expect(secret.length).toBeGreaterThan(40);
      const elsewhere = filesUnder(home, join(home, 'vm-manager')).filter((f) => readFileSync(f).includes(secret));
      expect(elsewhere).toEqual([]);

      // a key file others may read is refused, naming it
      chmodSync(keyFile, 0o644);
      try {
        await expect(t.call('ssh.openVmSsh', { vmId, ...size })).rejects.toMatchObject({
          code: 'unavailable',
          message: expect.stringContaining('may be read by others'),
        });
      } finally {
        chmodSync(keyFile, 0o600);
      }
    },
    120_000,
  );

  it('types the template runner into the serial console as a job and sees sha256 match', async () => {
    const runner = runnerScript();
    const started = Date.now();
    const { jobId } = await t.call('ssh.typeInto', { sessionId: interactiveId, script: runner.script, path: '/tmp/runner.sh' });
    const job = await t.jobs.wait(jobId);
    expect(job.error).toBeNull();
    const r = job.result as { match: boolean; expected: string; actual: string | null; lines: number };
    expect(r.expected).toBe(runner.sha256);
    expect(r.actual).toBe(runner.sha256);
    expect(r.match).toBe(true);
    expect(r.lines).toBe(runner.lines.length);
    console.log(`typed ${r.lines} runner lines into the serial console in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 120_000);

  it('the read-only console tails the log (READY shows) and refuses input', async () => {
    const { sessionId } = await t.call('ssh.openVmConsole', { vmId, ...size });
    const c = new Consumer(t.base.hub, sessionId);
    await waitFor('open', () => statuses.items.find((s) => s.sessionId === sessionId && s.state === 'open'));
    expect(statuses.items.find((s) => s.sessionId === sessionId)?.interactive).toBe(false);
    await waitFor('the tail', () => c.text.includes('povdesk-agent: READY'));
    await expect(t.call('ssh.input', { sessionId, data: 'ls\r' })).rejects.toMatchObject({
      code: 'unsupported',
      message: expect.stringContaining('read-only'),
    });
    const { jobId } = await t.call('ssh.typeInto', { sessionId, script: 'echo hi\n' });
    const job = await t.jobs.wait(jobId);
    expect(job.state).toBe('failed');
    expect(job.error?.code).toBe('unsupported');
    // what is typed on the interactive console shows up in the tail too
    await t.call('ssh.input', { sessionId: interactiveId, data: 'echo tail-$((2+3))\r' });
    await waitFor('the typed command in the tail', () => c.text.includes('tail-5'), 20_000);
    await t.call('ssh.close', { sessionId });
  }, 60_000);

  it('a remote vm-manager has no console here: unsupported', async () => {
    const ep = JSON.parse(readFileSync(join(home, 'vm-manager', 'endpoint.json'), 'utf8')) as { url: string; token: string };
    await t.call('vm.setConnection', { mode: 'remote', url: ep.url, token: ep.token });
    try {
      await expect(t.call('ssh.openVmConsole', { vmId, interactive: true, ...size })).rejects.toMatchObject({ code: 'unsupported' });
      await expect(t.call('ssh.openVmSsh', { vmId, ...size })).rejects.toMatchObject({ code: 'unsupported' });
    } finally {
      await t.call('vm.setConnection', { mode: 'local' });
    }
  });

  it('a stopped VM is refused with conflict; the open interactive session reports the drop', async () => {
    await t.call('vm.stop', { id: vmId });
    await waitFor(
      'the serial session to drop',
      () => statuses.items.find((s) => s.sessionId === interactiveId && s.closedBy === 'dropped'),
      20_000,
    );
    await expect(t.call('ssh.openVmConsole', { vmId, interactive: true, ...size })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('stopped'),
    });
    await expect(t.call('ssh.openVmConsole', { vmId, ...size })).rejects.toMatchObject({ code: 'conflict' });
    await expect(t.call('ssh.openVmSsh', { vmId, ...size })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('stopped'),
    });
    await t.call('ssh.close', { sessionId: interactiveId });
  }, 60_000);
});
