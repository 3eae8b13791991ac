/**
 * The VM service: create / start / stop / reboot / delete, forwards, and reattach or cleanup of live
 * processes when the manager restarts (recover.ts). Records live in vm-record.ts, processes behind
 * the Launcher (launcher.ts), a boot's steps in vm-boot.ts, supervision and the boot timeout in
 * supervision.ts, what the guest reports in guest.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VmNetwork } from './argv';
import { tailLines } from './console';
import { VmmError } from './errors';
import { GuestBook, waitFor } from './guest';
import { getImage } from './images';
import type { Launcher } from './launcher';
import { recoverVms } from './recover';
import { resetCleanState, saveCleanState, type CleanHost } from './clean-state';
import { DEFAULT_TIMEOUTS, Supervisor, type Timeouts } from './supervision';
import { VmBoots, type VmLan } from './vm-boot';
import {
  LIVE,
  newRecord,
  now,
  VmRecords,
  type CreateInput,
  type PortForward,
  type StageResult,
  type VmRecord,
  type WaitFor,
} from './vm-record';

export { METADATA_PROXY } from './launcher';
export { DEFAULT_TIMEOUTS, type Timeouts } from './supervision';
export type { CreateInput, StageResult, VmRecord, VmState, WaitFor } from './vm-record';

export interface VmServiceOptions {
  stateDir: string;
  launcher: Launcher;
  /** a network's policy by name (networks.ts); unknown names are refused before create */
  networkMode?: (name: string) => VmNetwork;
  /** real networks (vm-boot.ts `VmLan`); without them VMs get eth0 only (tests with a fake launcher) */
  lan?: VmLan;
  timeouts?: Partial<Timeouts>;
  /** console.log cap while a VM runs (default CONSOLE_MAX_BYTES) */
  consoleMaxBytes?: number;
  log?: (msg: string) => void;
}

const newId = () => randomBytes(4).toString('hex');

export class VmService {
  readonly timeouts: Timeouts;
  readonly launcher: Launcher;
  private readonly recs = new VmRecords();
  private readonly sup: Supervisor;
  private readonly guest: GuestBook;
  private readonly boots: VmBoots;
  private readonly vmsDir: string;

  constructor(private readonly o: VmServiceOptions) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
    this.launcher = o.launcher;
    this.vmsDir = join(o.stateDir, 'vms');
    mkdirSync(this.vmsDir, { recursive: true });
    const log = (m: string) => o.log?.(m);
    this.sup = new Supervisor(this.recs, o.launcher, { timeouts: this.timeouts, consoleMaxBytes: o.consoleMaxBytes, log });
    this.guest = new GuestBook(this.recs, (id) => this.sup.clearBootTimer(id));
    this.boots = new VmBoots({
      stateDir: o.stateDir,
      recs: this.recs,
      sup: this.sup,
      guest: this.guest,
      launcher: o.launcher,
      timeouts: this.timeouts,
      lan: o.lan,
      networkMode: o.networkMode,
      log: o.log,
    });
  }

  get events() {
    return this.recs.events;
  }

  list(): VmRecord[] {
    return this.recs.list();
  }

  get(id: string): VmRecord {
    return this.recs.get(id);
  }

  consoleTail(id: string, lines: number): string[] {
    return tailLines(this.get(id).paths.console, lines);
  }

  readUserData(id: string): string | null {
    const r = this.get(id);
    if (!r.hasUserData || !existsSync(r.paths.userData)) return null;
    return readFileSync(r.paths.userData, 'utf8');
  }

  /**
   * Replaces the VM's user-data (null or '': none, the metadata service answers 204). The file is
   * written atomically, so a guest never reads half of it; the release gate does not change.
   */
  setUserData(id: string, userData: string | null): VmRecord {
    const r = this.get(id);
    if (r.state === 'deleting') throw new VmmError('conflict', `VM ${id} is being deleted`);
    if (userData === null || userData === '') rmSync(r.paths.userData, { force: true });
    else {
      const tmp = `${r.paths.userData}.tmp`;
      writeFileSync(tmp, userData, { mode: 0o600 });
      renameSync(tmp, r.paths.userData);
    }
    return this.recs.update(id, (v) => (v.hasUserData = userData !== null && userData !== ''));
  }

  /** "Save clean state" (clean-state.ts): of a ready VM with its memory (it runs on from the save), of a stopped one its files. */
  saveClean(id: string): Promise<VmRecord> {
    return saveCleanState(this.cleanHost, id);
  }

  /** "Reset to clean state": resumes the saved memory (ready again after a fresh quote), else leaves the VM stopped. */
  resetClean(id: string): Promise<VmRecord> {
    return resetCleanState(this.cleanHost, id);
  }

  private get cleanHost(): CleanHost {
    return {
      recs: this.recs,
      launcher: this.launcher,
      // the guest is paused (its memory saved) or about to be thrown away: no powerdown
      halt: async (id) => void this.recs.update((await this.stop(id, 0)).id, (v) => (v.lastError = null)),
      stop: (id) => this.stop(id),
      start: (id) => this.start(id),
      resume: (id, memory) => this.boots.launch(id, memory),
      internet: (r) => this.boots.internetNow(r),
    };
  }

  // ---- guest events (from the metadata service) ----------------------------------------------

  guestContact(id: string) {
    this.guest.contact(id);
  }
  nonceIssued(id: string) {
    this.guest.nonceIssued(id);
  }
  recordQuote(id: string, result: StageResult, stage: 'initrd' | 'ready') {
    this.guest.recordQuote(id, result, stage);
  }
  guestReady(id: string): boolean {
    return this.guest.ready(id);
  }
  waitFor(id: string, milestone: WaitFor, ms: number): Promise<VmRecord> {
    return waitFor(this.recs, id, milestone, ms);
  }

  // ---- create / start ------------------------------------------------------------------------

  async create(input: CreateInput): Promise<VmRecord> {
    const image = getImage(this.o.stateDir, input.image);
    if (this.list().some((v) => v.name === input.name && v.state !== 'deleting')) {
      throw new VmmError('conflict', `a VM named "${input.name}" exists; pick another name or delete it first`);
    }
    if (image.kind === 'disk' && image.virtualSizeBytes && input.diskGiB * 1024 ** 3 < image.virtualSizeBytes) {
      throw new VmmError(
        'invalid_request',
        `disk_gib ${input.diskGiB} is smaller than image "${image.name}" (${Math.ceil(image.virtualSizeBytes / 1024 ** 3)} GiB)`,
      );
    }
    let id = newId();
    while (this.recs.has(id)) id = newId();
    const dir = join(this.vmsDir, id);
    const network = input.network ?? 'default';
    const lease = this.boots.leaseOn(network, id);
    const r = newRecord(input, { id, image: image.name, network, lease, accel: this.launcher.accel, dir });
    mkdirSync(r.paths.tpmState, { recursive: true });
    this.recs.hold(r);
    try {
      if (r.hasUserData) writeFileSync(r.paths.userData, input.userData ?? '', { mode: 0o600 });
      this.launcher.prepare(r, image.kind === 'disk' && image.disk ? join(image.dir, image.disk) : null);
      r.installedAt = now();
      this.recs.save(r);
    } catch (e) {
      this.recs.forget(id);
      rmSync(dir, { recursive: true, force: true });
      throw new VmmError('internal', `could not prepare VM files: ${e instanceof Error ? e.message : String(e)}`);
    }
    await this.boots.launch(id);
    return this.get(id);
  }

  async start(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (r.state !== 'stopped' && r.state !== 'failed')
      throw new VmmError('conflict', `VM ${id} is ${r.state}; start works only from stopped or failed`);
    await this.boots.launch(id);
    return this.get(id);
  }

  // ---- stop / reboot / delete / forward ------------------------------------------------------

  async stop(id: string, powerdownMs = this.timeouts.powerdownMs): Promise<VmRecord> {
    const r = this.get(id);
    if (!LIVE.includes(r.state)) throw new VmmError('conflict', `VM ${id} is ${r.state}; stop works only while it runs`);
    const rt = this.sup.runtime(id);
    rt.stopping = true;
    this.sup.clearBootTimer(id);
    this.recs.update(id, (v) => (v.state = 'stopping'));
    const how = await this.launcher.stop(r, powerdownMs);
    this.recs.update(id, (v) => {
      v.state = 'stopped';
      v.stoppedAt = now();
      v.pids = { qemu: null, swtpm: null };
      v.ports = { ssh: null };
      const signal = how === 'term' ? 'SIGTERM' : 'SIGKILL';
      v.lastError =
        how === 'powerdown' || how === 'gone'
          ? null
          : `the guest did not power down within ${Math.round(powerdownMs / 1000)} s, so QEMU got ${signal}`;
    });
    rt.stopping = false;
    rt.generation++;
    return this.get(id);
  }

  async reboot(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (!LIVE.includes(r.state)) throw new VmmError('conflict', `VM ${id} is ${r.state}; reboot works only while it runs`);
    try {
      await this.launcher.reset(r);
    } catch (e) {
      throw new VmmError(
        'conflict',
        `VM ${id}: QEMU did not take the reset (${e instanceof Error ? e.message : String(e)}); stop and start it instead`,
      );
    }
    this.boots.newBoot(id);
    return this.get(id);
  }

  async delete(id: string): Promise<void> {
    const r = this.get(id);
    if (r.state === 'deleting') throw new VmmError('conflict', `VM ${id} is already being deleted`);
    const rt = this.sup.runtime(id);
    rt.stopping = true;
    this.sup.clearBootTimer(id);
    this.recs.update(id, (v) => (v.state = 'deleting'));
    await this.launcher.stop(r, 0);
    rt.generation++;
    this.sup.forget(id);
    this.recs.forget(id);
    this.events.emit('deleted', id);
    const trash = join(this.vmsDir, `.deleted-${id}-${Date.now()}`);
    renameSync(r.paths.dir, trash);
    rmSync(trash, { recursive: true, force: true });
  }

  /** A guest port on the host's 127.0.0.1, kept until the VM is deleted (re-made at each start). */
  async forward(id: string, port: number): Promise<PortForward> {
    const r = this.get(id);
    const had = r.forwards.find((f) => f.port === port);
    if (had) return had;
    if (!LIVE.includes(r.state)) throw new VmmError('conflict', `VM ${id} is ${r.state}; forward works only while it runs`);
    if (port === 22 && r.ports.ssh) return { port, hostPort: r.ports.ssh };
    const f = { port, hostPort: await this.launcher.freePort() };
    try {
      await this.launcher.addForward(r, f.hostPort, port);
    } catch (e) {
      throw new VmmError(
        'conflict',
        `VM ${id}: QEMU did not take the forward of port ${port} (${e instanceof Error ? e.message : String(e)})`,
      );
    }
    this.recs.update(id, (v) => v.forwards.push(f));
    return f;
  }

  // ---- restart: reattach or clean up ---------------------------------------------------------

  /** Loads every record; reattaches to live VMs and cleans up after dead ones (recover.ts). Call once at start. */
  recover(): Promise<{ reattached: string[]; cleaned: string[] }> {
    return recoverVms({
      vmsDir: this.vmsDir,
      recs: this.recs,
      launcher: this.launcher,
      sup: this.sup,
      bootMs: this.timeouts.bootMs,
      onGuestReset: (id) => this.boots.guestReset(id),
    });
  }

  /** Stops supervision timers (the VMs keep running: they are detached). */
  detach() {
    this.sup.detach();
  }

  /**
   * Stops every running VM (for `serve --stop-vms-on-exit` and tests). A VM still 'creating' may
   * already have QEMU and swtpm running: its launch is waited for (it ends booting or failed,
   * within the start timeouts) and the VM stopped with the rest.
   */
  async stopAll() {
    await Promise.allSettled(this.boots.underway());
    await Promise.all(
      this.list()
        .filter((r) => LIVE.includes(r.state))
        .map((r) => this.stop(r.id).catch(() => {})),
    );
  }
}
