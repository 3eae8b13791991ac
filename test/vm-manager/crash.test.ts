/**
 * SIGKILL of qemu, of swtpm and of the manager itself mid-boot: states end stopped/failed with the
 * console tail kept, a restarted manager reattaches to live VMs or cleans up, and no qemu or swtpm
 * process is left behind (checked in /proc).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClient as VmManagerClient } from './support';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { pidsWith, repo, stateWithImage, until, vmSkip } from './support';

const skip = vmSkip();

/** Runs `vm-manager serve` as its own process, like `povdesk vm-manager serve`. */
async function spawnManager(
  state: string,
): Promise<{ child: ChildProcess; url: string; recovered: { reattached: string[]; cleaned: string[] } }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(repo, 'main', 'vm-manager', 'main.ts'),
      'serve',
      '--state-dir',
      state,
      '--token',
      'tok',
      '--learn-golden',
      TEST_IMAGE,
    ],
    {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`manager exited with ${code}: ${err}`)));
  });
  const info = JSON.parse(line) as { url: string; recovered: { reattached: string[]; cleaned: string[] } };
  return { child, url: info.url, recovered: info.recovered };
}

describe.skipIf(skip !== null)('crashes mid-boot (real QEMU/TCG, OVMF, swtpm)', () => {
  let state: string;
  let m: RunningManager | null = null;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    state = stateWithImage('vmm-crash-');
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    if (m) {
      for (const v of m.vms.list()) await m.vms.delete(v.id).catch(() => {});
      await m.close();
    }
    // whatever a test left behind is a failure, but clean it up first
    const left = pidsWith(state);
    for (const p of left) process.kill(p, 'SIGKILL');
    rmSync(state, { recursive: true, force: true });
    expect(left).toEqual([]);
  });

  const bootingVm = async (client: VmManagerClient, name: string) => {
    const vm = await client.create({ name, require_attestation: false, wait_for: 'none' });
    expect(vm.state).toBe('booting');
    // mid-boot: the kernel has started printing, READY has not come
    await until('console output', async () => (await client.console(vm.id, 5)).lines > 0 || null, 60_000, 100);
    return client.get(vm.id);
  };

  it('SIGKILL of qemu: failed, console tail in lastError, swtpm stopped', async () => {
    m = await serve({ stateDir: state, token: 'tok', learn: [TEST_IMAGE] });
    const client = new VmManagerClient(m.url, 'tok');
    const vm = await bootingVm(client, 'kill-qemu');
    expect(pidsWith(vm.paths.tpmState)).toContain(vm.povdesk.pids.swtpm);
    process.kill(vm.povdesk.pids.qemu!, 'SIGKILL');
    const rec = await until('failed', async () => ((await client.get(vm.id)).state === 'failed' ? client.get(vm.id) : null), 20_000);
    expect(rec.lastError).toMatch(/^qemu was killed by SIGKILL before READY/);
    expect(rec.lastError).toMatch(/--- last \d+ console lines ---/);
    expect(rec.povdesk.pids).toEqual({ qemu: null, swtpm: null });
    expect(pidsWith(vm.paths.dir)).toEqual([]);
    expect((await client.console(vm.id, 10)).lines).toBeGreaterThan(0); // the console file is kept
  }, 120_000);

  it('SIGKILL of swtpm: the VM is stopped (its TPM is gone) and marked failed', async () => {
    const client = new VmManagerClient(m!.url, 'tok');
    const vm = await bootingVm(client, 'kill-swtpm');
    process.kill(vm.povdesk.pids.swtpm!, 'SIGKILL');
    const rec = await until('failed', async () => ((await client.get(vm.id)).state === 'failed' ? client.get(vm.id) : null), 20_000);
    expect(rec.lastError).toMatch(/swtpm \(the VM's TPM\) exited unexpectedly/);
    expect(rec.lastError).toMatch(/console lines/);
    expect(pidsWith(vm.paths.dir)).toEqual([]);
    // a failed VM starts again, and its TPM state dir was kept
    expect(existsSync(join(vm.paths.tpmState, 'tpm2-00.permall'))).toBe(true);
    await client.delete(vm.id);
    await m!.close();
    m = null;
  }, 120_000);

  it('SIGKILL of the manager mid-boot: the VM keeps running, a new manager reattaches and sees it ready', async () => {
    const a = await spawnManager(state);
    children.push(a.child);
    const client = new VmManagerClient(a.url, 'tok');
    const vm = await bootingVm(client, 'kill-manager');
    a.child.kill('SIGKILL');
    await new Promise((r) => a.child.once('exit', r));
    await new Promise((r) => setTimeout(r, 1000));
    expect(pidsWith(vm.paths.dir)).toContain(vm.povdesk.pids.qemu); // VMs outlive the manager
    const b = await spawnManager(state);
    children.push(b.child);
    expect(b.recovered.reattached).toContain(vm.id);
    const client2 = new VmManagerClient(b.url, 'tok');
    const ready = await until(
      'ready after reattach',
      async () => {
        const r = await client2.get(vm.id);
        return r.state === 'ready' ? r : null;
      },
      150_000,
      500,
    );
    expect(ready.povdesk.pids.qemu).toBe(vm.povdesk.pids.qemu);
    expect(ready.attestation.initrd?.verified ?? true).toBe(true);

    // now kill the manager and the VM's qemu while it is away: the next manager cleans up
    b.child.kill('SIGKILL');
    await new Promise((r) => b.child.once('exit', r));
    process.kill(vm.povdesk.pids.qemu!, 'SIGKILL');
    await until('qemu gone', () => !pidsWith(vm.paths.dir).includes(vm.povdesk.pids.qemu!) || null, 10_000);
    const c = await spawnManager(state);
    children.push(c.child);
    expect(c.recovered.cleaned).toContain(vm.id);
    const client3 = new VmManagerClient(c.url, 'tok');
    const dead = await client3.get(vm.id);
    expect(dead.state).toBe('failed');
    expect(dead.lastError).toMatch(/qemu exited while vm-manager was not running/);
    expect(dead.lastError).toMatch(/povdesk-agent: READY/); // console tail kept
    expect(pidsWith(vm.paths.dir)).toEqual([]); // swtpm was stopped too
    await client3.delete(vm.id);
    c.child.kill('SIGTERM');
    await new Promise((r) => c.child.once('exit', r));
  }, 300_000);
});
