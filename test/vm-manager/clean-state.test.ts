/**
 * The clean state's fallbacks, with the fake launcher (no QEMU): a VM saved while ready whose
 * memory cannot be saved is saved without it, started again, and its reset says it was not resumed
 * and why (the VM left stopped for a boot of the saved disks); a ready VM whose memory was saved is
 * resumed by the reset (QEMU started on the saved file) and withheld again until it attests, and
 * one stopped meanwhile is no longer asked for its quote or its clock; a save while it boots is
 * refused and changes nothing. Real guests: networks.test.ts.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { VmService } from '../../main/vm-manager/vms';
import { needs } from '../support/system';
import type { StartOptions } from '../../main/vm-manager/launcher';
import type { VmRecord } from '../../main/vm-manager/vm-record';
import { attestingGuest, FakeLauncher, writeStubTestImage } from './fake-launcher';

/** A launcher whose memory saves write a file, or fail with `memoryFails`; it remembers what each start resumed. */
class MemoryLauncher extends FakeLauncher {
  memoryFails: string | null = null;
  readonly resumed: (string | undefined)[] = [];
  async saveMemory(_r: VmRecord, file: string) {
    if (this.memoryFails) throw new Error(this.memoryFails);
    writeFileSync(file, 'saved memory');
  }
  override async start(r: VmRecord, o: StartOptions) {
    this.resumed.push(o.incoming && readFileSync(o.incoming, 'utf8'));
    return super.start(r, o);
  }
}

const skip = needs(['dropbearkey', 'ssh-keygen']);

describe.skipIf(skip)('clean state: memory saved and resumed, or a cold boot that says why', () => {
  let state: string;
  let launcher: MemoryLauncher;
  let vms: VmService;

  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), 'vmm-clean-'));
    writeStubTestImage(state);
    launcher = new MemoryLauncher();
    vms = new VmService({ stateDir: state, launcher, timeouts: { startMs: 1000, bootMs: 60_000, powerdownMs: 200, termMs: 200 } });
  });
  afterEach(async () => {
    await vms.stopAll();
    rmSync(state, { recursive: true, force: true });
  });

  const readyVm = async () => {
    launcher.onStart = attestingGuest(vms as never);
    const v = await vms.create({
      name: 'c1',
      image: TEST_IMAGE,
      cpus: 1,
      memoryMiB: 256,
      diskGiB: 1,
      userData: null,
      requireAttestation: true,
      waitFor: 'none',
    });
    return (await vms.waitFor(v.id, 'ready', 5000)).id;
  };

  it('refuses a save while the VM boots, and saves nothing', async () => {
    const v = await vms.create({
      name: 'c0',
      image: TEST_IMAGE,
      cpus: 1,
      memoryMiB: 256,
      diskGiB: 1,
      userData: null,
      requireAttestation: true,
      waitFor: 'none',
    });
    await expect(vms.saveClean(v.id)).rejects.toMatchObject({
      code: 'conflict',
      message: /booting; save its clean state once it is ready/,
    });
    expect(existsSync(join(vms.get(v.id).paths.dir, 'clean'))).toBe(false);
    expect(vms.get(v.id).cleanAt).toBeNull();
  });

  it('a memory that cannot be saved: saved without it, started again; the reset says so and leaves a cold boot', async () => {
    const id = await readyVm();
    launcher.memoryFails = 'migration blocked by a device';
    const saved = await vms.saveClean(id);
    expect(saved).toMatchObject({
      cleanMemory: false,
      cleanNote: expect.stringMatching(/memory could not be saved \(migration blocked by a device\)/),
    });
    expect((await vms.waitFor(id, 'ready', 5000)).state).toBe('ready'); // started again (a boot, not a resume)
    expect(launcher.resumed).toEqual([undefined, undefined]);
    const reset = await vms.resetClean(id);
    expect(reset.state).toBe('stopped');
    expect(reset.lastReset).toMatchObject({ memory: false, note: expect.stringMatching(/migration blocked by a device/) });
  });

  it('a saved memory is resumed by the reset; the VM is withheld again until it attests', async () => {
    const id = await readyVm();
    const saved = await vms.saveClean(id);
    expect(saved).toMatchObject({ cleanMemory: true, cleanNote: null });
    launcher.onStart = null; // the resumed fake guest says nothing: no quote, so never ready
    const reset = await vms.resetClean(id);
    expect(launcher.resumed.at(-1)).toBe('saved memory');
    expect(reset.lastReset).toMatchObject({ memory: true, note: null });
    expect(reset.state).toBe('booting');
    expect(reset.attestation.userDataReleased).toBe(false);
    expect(reset.attestation.ready).toBeNull();
  });

  it('a VM stopped while its resumed memory waits for its quote: the quote gives up, no clock is set, nothing logged', async () => {
    await vms.stopAll();
    const lines: string[] = [];
    const timeouts = { startMs: 1000, bootMs: 3000, powerdownMs: 200, termMs: 200 };
    vms = new VmService({ stateDir: state, launcher, timeouts, log: (m) => lines.push(m) });
    const id = await readyVm();
    await vms.saveClean(id);
    launcher.onStart = null; // the resumed fake guest never answers SSH
    await vms.resetClean(id);
    await new Promise((r) => setTimeout(r, 1000));
    await vms.stop(id);
    // past the quote's deadline: a quote still waiting would give up now and go on to set the clock
    await new Promise((r) => setTimeout(r, 3000));
    expect(lines.filter((l) => l.includes('clock'))).toEqual([]);
    expect(vms.get(id).state).toBe('stopped');
  });
});
