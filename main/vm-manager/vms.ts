/**
 * The VM service: create / start / stop / reboot / delete, forwards, and reattach or cleanup of live
 * processes when the manager restarts (recover.ts). Records live in vm-record.ts, processes behind the Launcher
 * (launcher.ts), supervision and the boot timeout in supervision.ts, what the guest reports in
 * guest.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QemuSpec, VmNetwork } from './argv';
import type { Lease } from './networks';
import { tailLines } from './console';
import { VmmError } from './errors';
import { ensureManagerKey } from './exec';
import { GuestBook, waitFor } from './guest';
import { getImage, readPolicy } from './images';
import { LaunchError, type Launcher } from './launcher';
import { recoverVms } from './recover';
import { ensureSshHostKey } from './ssh-host-key';
import { quoteAfterResume, resetCleanState, saveCleanState, type CleanHost } from './clean-state';
import { DEFAULT_TIMEOUTS, Supervisor, type Timeouts } from './supervision';
import {
  LIVE,
  now,
  recordPaths,
  secondsBetween,
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
  /**
   * Real networks (networks.ts, net-switch.ts): a VM's lease is fixed at create, and its network's
   * switch is up before its QEMU starts. Without it VMs get eth0 only (tests with a fake launcher).
   */
  lan?: {
    leaseFor(network: string, vmId: string, taken: string[]): Lease;
    /** the switch's control directory, once it runs */
    up(network: string): Promise<string>;
    /** whether the network has Internet access now (each start follows it) */
    internet?(network: string): boolean;
  };
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
  private readonly vmsDir: string;

  constructor(private readonly o: VmServiceOptions) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
    this.launcher = o.launcher;
    this.vmsDir = join(o.stateDir, 'vms');
    mkdirSync(this.vmsDir, { recursive: true });
    const log = (m: string) => o.log?.(m);
    this.sup = new Supervisor(this.recs, o.launcher, { timeouts: this.timeouts, consoleMaxBytes: o.consoleMaxBytes, log });
    this.guest = new GuestBook(this.recs, (id) => this.sup.clearBootTimer(id));
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
      resume: (id, memory) => this.launch(id, memory),
      internet: (r) => this.internetNow(r),
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
    const r: VmRecord = {
      id,
      name: input.name,
      image: image.name,
      cpus: input.cpus,
      memoryMiB: input.memoryMiB,
      diskGiB: input.diskGiB,
      requireAttestation: input.requireAttestation,
      waitFor: input.waitFor,
      network,
      lease: this.leaseOn(network, id),
      accel: this.launcher.accel,
      state: 'creating',
      machineID: randomBytes(16).toString('hex'),
      hostname: input.hostname ?? null,
      metadata: input.metadata ?? {},
      sshAuthorizedKeys: input.sshAuthorizedKeys ?? [],
      createdAt: now(),
      installedAt: null,
      startedAt: null,
      bootedAt: null,
      readyAt: null,
      stoppedAt: null,
      booted: false,
      durations: { installSeconds: null, bootSeconds: null, readySeconds: null },
      lastError: null,
      hasUserData: input.userData !== null && input.userData !== '',
      attestation: {
        required: input.requireAttestation,
        ...(input.learnGolden ? { learn: true } : {}),
        userDataReleased: false,
        nonceIssuedAt: null,
        akFingerprint: null,
        akPub: null,
        initrd: null,
        ready: null,
      },
      sshHostKey: null,
      sshKey: null,
      cleanAt: null,
      cleanMemory: false,
      cleanNote: null,
      lastReset: null,
      pids: { qemu: null, swtpm: null },
      ports: { ssh: null },
      forwards: [],
      hostForwards: input.hostForwards ?? [],
      paths: recordPaths(dir, true),
    };
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
    await this.launch(id);
    return this.get(id);
  }

  /** A new lease on the network, in the record before it is first saved (so a crash never leaves a VM without one). */
  private leaseOn(network: string, id: string): Lease | null {
    if (!this.o.lan) return null;
    const taken = this.list()
      .filter((v) => v.network === network && v.lease && v.id !== id)
      .map((v) => v.lease!.ip);
    return this.o.lan.leaseFor(network, id, taken);
  }

  async start(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (r.state !== 'stopped' && r.state !== 'failed')
      throw new VmmError('conflict', `VM ${id} is ${r.state}; start works only from stopped or failed`);
    await this.launch(id);
    return this.get(id);
  }

  private resetBoot(r: VmRecord) {
    r.bootedAt = null;
    r.readyAt = null;
    r.stoppedAt = null;
    r.attestation.userDataReleased = !r.requireAttestation;
    r.attestation.nonceIssuedAt = null;
    r.attestation.initrd = null;
    r.attestation.ready = null;
    r.durations.bootSeconds = null;
    r.durations.readySeconds = null;
    this.events.emit('boot-reset', r.id);
  }

  /** Launches under way, so stopAll can wait for a VM still 'creating' to reach a state it stops. */
  private readonly launching = new Set<Promise<void>>();

  private launch(id: string, incoming?: string): Promise<void> {
    const p = this.launchNow(id, incoming);
    this.launching.add(p);
    const done = () => void this.launching.delete(p);
    p.then(done, done);
    return p;
  }

  private internetNow(r: VmRecord): boolean {
    return this.o.lan !== undefined && r.lease !== null && (this.o.lan.internet?.(r.network) ?? false);
  }

  /** Boots the VM, or with `incoming` resumes that memory snapshot and has the guest attest again. */
  private async launchNow(id: string, incoming?: string): Promise<void> {
    const r = this.get(id);
    const rt = this.sup.runtime(id);
    rt.stopping = false;
    rt.failReason = null;
    rt.generation++;
    const gen = rt.generation;
    this.recs.update(id, (v) => {
      v.state = 'creating';
      v.lastError = null;
      this.resetBoot(v);
    });
    const fail = async (msg: string): Promise<never> => {
      await this.launcher.stop(r, 0).catch(() => {});
      this.recs.update(id, (v) => {
        v.state = 'failed';
        v.lastError = msg;
        v.stoppedAt = now();
        v.pids = { qemu: null, swtpm: null };
        v.ports = { ssh: null };
      });
      throw new VmmError(
        'vm_failed',
        `VM ${id}: ${msg.split('\n')[0]}; the VM still exists: see GET /api/v1/vms/${id} (lastError) or delete it`,
      );
    };
    try {
      // The AK is the manager's: made in the VM's swtpm before the guest runs, and pinned (a record from
      // before host provisioning gets one now, replacing any key its guest made).
      if (!r.attestation.akPub) {
        const ak = await this.launcher.provisionAk(r).catch((e: unknown) => {
          throw new LaunchError(`could not provision the VM's attestation key in its swtpm: ${e instanceof Error ? e.message : String(e)}`);
        });
        this.recs.update(id, (v) => {
          v.attestation.akPub = ak.pub;
          v.attestation.akFingerprint = ak.fingerprint;
        });
      }
      if (!r.sshHostKey) {
        const key = await ensureSshHostKey(r.paths.dir);
        this.recs.update(id, (v) => (v.sshHostKey = key));
      }
      if (!r.sshKey) {
        const key = await ensureManagerKey(r.paths.sshKey, r.id);
        this.recs.update(id, (v) => (v.sshKey = key));
      }
      this.recs.update(id, (v) => (v.paths.serialSocket = join(v.paths.dir, 'serial.sock')));
      if (this.o.lan && !r.lease) this.recs.update(id, (v) => (v.lease = this.leaseOn(v.network, v.id)));
      const lan = this.o.lan && r.lease ? { sock: await this.o.lan.up(r.network), mac: r.lease.mac } : null;
      const launched = await this.launcher.start(r, {
        boot: this.bootSource(r),
        lan,
        internet: lan !== null && this.internetNow(r),
        incoming,
        network: this.o.networkMode?.(r.network) ?? (r.network === 'nat' ? 'nat' : 'restricted'),
        onPid: (kind, pid) => this.recs.update(id, (v) => (v.pids[kind] = pid)),
      });
      if (gen !== this.sup.runtime(id).generation) return;
      this.recs.update(id, (v) => {
        v.pids = { ...launched.pids };
        v.ports = { ssh: launched.sshPort };
      });
      await this.sup.watchResets(id, () => this.guestReset(id));
      this.recs.update(id, (v) => {
        v.state = 'booting';
        v.startedAt = now();
        v.durations.installSeconds = secondsBetween(v.createdAt, v.startedAt);
        v.attestation.userDataReleased = !v.requireAttestation;
      });
      this.sup.supervise(id, launched.qemuExit, launched.swtpmExit);
      this.sup.armBootTimer(id, this.timeouts.bootMs);
      if (incoming !== undefined) void this.attestResumed(id, gen);
    } catch (e) {
      await fail(e instanceof Error ? e.message : String(e));
    }
  }

  /** A resumed guest is ready once its fresh quote verifies (clean-state.ts); its user-data is released then. */
  private async attestResumed(id: string, gen: number) {
    const r = this.get(id);
    let pcrs: number[] | null = null;
    try {
      pcrs = readPolicy(getImage(this.o.stateDir, r.image).dir)?.pcrs.ready ?? null;
    } catch {
      /* the quote says what is missing */
    }
    const why = await quoteAfterResume(r, pcrs, this.timeouts.bootMs);
    const v = this.recs.find(id);
    if (!v || gen !== this.sup.runtime(id).generation || !LIVE.includes(v.state)) return;
    const verified = why === null && v.attestation.ready?.verified === true && v.attestation.nonceIssuedAt !== null;
    if (verified || !v.requireAttestation) {
      this.recs.update(id, (x) => (x.attestation.userDataReleased = true));
      this.guest.ready(id);
    } else {
      this.recs.update(
        id,
        (x) =>
          (x.lastError = `resumed from its clean state, but its fresh quote did not verify: ${why ?? x.attestation.ready?.message ?? 'no quote arrived'}`),
      );
    }
  }

  private guestReset(id: string) {
    const r = this.recs.find(id);
    if (!r || !LIVE.includes(r.state)) return;
    this.o.log?.(`vm ${id}: the guest reset itself; user-data is withheld until a new initrd quote verifies`);
    this.newBoot(id);
  }

  /** A reset (ours or the guest's): a new boot whose attestation starts over and whose user-data is withheld again. */
  private newBoot(id: string) {
    this.recs.update(id, (v) => {
      this.resetBoot(v);
      v.state = 'booting';
      v.startedAt = now();
      v.lastError = null;
    });
    this.sup.armBootTimer(id, this.timeouts.bootMs);
  }

  private bootSource(r: VmRecord): QemuSpec['boot'] {
    const img = getImage(this.o.stateDir, r.image);
    if (img.kind === 'kernel' && img.kernel && img.initrd) {
      return {
        kind: 'kernel',
        kernel: join(img.dir, img.kernel),
        initrd: join(img.dir, img.initrd),
        append: img.cmdline ?? '',
        dataDisk: r.paths.disk,
      };
    }
    if (!r.paths.disk) throw new VmmError('internal', `VM ${r.id} has a disk image but no overlay`);
    return { kind: 'disk', overlay: r.paths.disk };
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
      v.lastError =
        how === 'powerdown' || how === 'gone'
          ? null
          : `the guest did not power down within ${Math.round(powerdownMs / 1000)} s, so QEMU got ${how === 'term' ? 'SIGTERM' : 'SIGKILL'}`;
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
    this.newBoot(id);
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
      onGuestReset: (id) => this.guestReset(id),
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
    await Promise.allSettled([...this.launching]);
    await Promise.all(
      this.list()
        .filter((r) => LIVE.includes(r.state))
        .map((r) => this.stop(r.id).catch(() => {})),
    );
  }
}
