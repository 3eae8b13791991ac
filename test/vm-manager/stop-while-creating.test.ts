/**
 * A VM is 'creating' from the create call until QEMU and swtpm run and the record says 'booting'.
 * Stopping everything (`close({stopVms})`) or deleting the VM inside that window must still take
 * its processes down. stopAll passed over 'creating' VMs, so the launch went on and left QEMU and
 * swtpm running under a manager that had let go (the first test failed so); a delete already
 * stops what the record names, and the second test keeps it so.
 * The fake launcher stands in for QEMU here (its "processes" say whether they were ended); the
 * learn boot's SIGTERM test (learn-stop.test.ts) covers the same path with a real QEMU.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { VmService, type CreateInput } from '../../main/vm-manager/vms';
import { needs } from '../support/system';
import type { StartOptions } from '../../main/vm-manager/launcher';
import type { VmRecord } from '../../main/vm-manager/vm-record';
import { FakeLauncher, writeStubTestImage } from './fake-launcher';

/** Holds a start after its processes run, as QEMU's start waits for its monitor to come up. */
class HeldLauncher extends FakeLauncher {
  private gate: Promise<void> | null = null;
  private release = () => {};
  /** From now on a start waits, its processes running, until open(). */
  hold() {
    this.gate = new Promise<void>((r) => (this.release = r));
  }
  open() {
    this.release();
    this.gate = null;
  }
  override async start(r: VmRecord, o: StartOptions) {
    const launched = await super.start(r, o);
    if (this.gate) await this.gate;
    return launched;
  }
}

const skip = needs(['dropbearkey', 'ssh-keygen']);

const input = (name: string): CreateInput => ({
  name,
  image: TEST_IMAGE,
  cpus: 1,
  memoryMiB: 256,
  diskGiB: 1,
  userData: null,
  requireAttestation: false,
  waitFor: 'none',
});

describe.skipIf(skip)('stopping a VM that is still being created', () => {
  let state: string;
  let launcher: HeldLauncher;
  let vms: VmService;
  const alive = () => [...launcher.procs.values()].filter((p) => p.alive).map((p) => `${p.vm} ${p.kind}`);

  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), 'vmm-creating-'));
    writeStubTestImage(state);
    launcher = new HeldLauncher();
    vms = new VmService({ stateDir: state, launcher, timeouts: { startMs: 1000, bootMs: 60_000, powerdownMs: 200, termMs: 200 } });
  });
  afterEach(() => {
    vms.detach();
    rmSync(state, { recursive: true, force: true });
  });

  const startedWhileCreating = async (name: string) => {
    const creating = vms.create(input(name));
    creating.catch(() => {});
    const id = vms.list().find((v) => v.name === name)!.id;
    while (vms.get(id).pids.qemu === null) await new Promise((r) => setTimeout(r, 5));
    expect(vms.get(id).state).toBe('creating');
    return { id, creating };
  };

  it('stopAll waits for a launch under way, then stops that VM with the others', async () => {
    const running = await vms.create(input('running'));
    expect(running.state).toBe('booting');
    launcher.hold();
    const { creating } = await startedWhileCreating('creating');
    expect(alive()).toHaveLength(4);
    let stopped = false;
    const stopping = vms.stopAll().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped, 'stopAll returned while a launch was under way').toBe(false);
    launcher.open();
    await stopping;
    await creating.catch(() => {});
    expect(alive()).toEqual([]);
    expect(
      vms
        .list()
        .map((v) => `${v.name} ${v.state}`)
        .sort(),
    ).toEqual(['creating stopped', 'running stopped']);
  });

  it('a delete while creating, with QEMU already started, ends QEMU and swtpm and the VM is gone', async () => {
    launcher.hold();
    const { id, creating } = await startedWhileCreating('doomed');
    expect(alive()).toHaveLength(2);
    await vms.delete(id);
    launcher.open();
    await creating.catch(() => {});
    expect(alive()).toEqual([]);
    expect(vms.list()).toEqual([]);
  });
});
