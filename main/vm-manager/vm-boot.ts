/**
 * A VM's boots, for the VM service (vms.ts): launching its processes (with the attestation key, SSH
 * keys and lease a first boot makes), resuming a saved memory and attesting it with a fresh quote
 * (clean-state.ts), and the new boot a reset starts, ours or the guest's: attestation starts over
 * and user-data is withheld again.
 */
import { join } from 'node:path';
import type { QemuSpec, VmNetwork } from './argv';
import { quoteAfterResume, setGuestClock } from './clean-state';
import { VmmError } from './errors';
import { ensureManagerKey } from './exec';
import type { GuestBook } from './guest';
import { getImage, readPolicy } from './images';
import { LaunchError, type Launcher } from './launcher';
import type { Lease } from './networks';
import { ensureSshHostKey } from './ssh-host-key';
import type { Supervisor, Timeouts } from './supervision';
import { LIVE, now, secondsBetween, type VmRecord, type VmRecords } from './vm-record';

/**
 * Real networks (networks.ts, net-switch.ts): a VM's lease is fixed at create, and its network's
 * switch is up before its QEMU starts. Without it VMs get eth0 only (tests with a fake launcher).
 */
export interface VmLan {
  leaseFor(network: string, vmId: string, taken: string[]): Lease;
  /** the switch's control directory, once it runs */
  up(network: string): Promise<string>;
  /** whether the network has Internet access now (each start follows it) */
  internet?(network: string): boolean;
}

/** What the boots work with: the VM service's parts and options. */
export interface BootParts {
  stateDir: string;
  recs: VmRecords;
  sup: Supervisor;
  guest: GuestBook;
  launcher: Launcher;
  timeouts: Timeouts;
  lan?: VmLan;
  /** a network's policy by name (networks.ts) */
  networkMode?: (name: string) => VmNetwork;
  log?: (msg: string) => void;
}

export class VmBoots {
  /** Launches under way, so stopAll can wait for a VM still 'creating' to reach a state it stops. */
  private readonly launching = new Set<Promise<void>>();

  constructor(private readonly o: BootParts) {}

  /** The launches under way now. */
  underway(): Promise<void>[] {
    return [...this.launching];
  }

  /** Boots the VM, or with `incoming` resumes that memory snapshot and has the guest attest again. */
  launch(id: string, incoming?: string): Promise<void> {
    const p = this.launchNow(id, incoming);
    this.launching.add(p);
    const done = () => void this.launching.delete(p);
    p.then(done, done);
    return p;
  }

  /** A new lease on the network, in the record before it is first saved (so a crash never leaves a VM without one). */
  leaseOn(network: string, id: string): Lease | null {
    if (!this.o.lan) return null;
    const taken = this.o.recs
      .list()
      .filter((v) => v.network === network && v.lease && v.id !== id)
      .map((v) => v.lease!.ip);
    return this.o.lan.leaseFor(network, id, taken);
  }

  internetNow(r: VmRecord): boolean {
    return this.o.lan !== undefined && r.lease !== null && (this.o.lan.internet?.(r.network) ?? false);
  }

  guestReset(id: string) {
    const r = this.o.recs.find(id);
    if (!r || !LIVE.includes(r.state)) return;
    this.o.log?.(`vm ${id}: the guest reset itself; user-data is withheld until a new initrd quote verifies`);
    this.newBoot(id);
  }

  /** A reset (ours or the guest's): a new boot whose attestation starts over and whose user-data is withheld again. */
  newBoot(id: string) {
    this.o.recs.update(id, (v) => {
      this.resetBoot(v);
      v.state = 'booting';
      v.startedAt = now();
      v.lastError = null;
    });
    this.o.sup.armBootTimer(id, this.o.timeouts.bootMs);
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
    this.o.recs.events.emit('boot-reset', r.id);
  }

  private async launchNow(id: string, incoming?: string): Promise<void> {
    const { recs, sup, launcher, lan } = this.o;
    const r = recs.get(id);
    const rt = sup.runtime(id);
    rt.stopping = false;
    rt.failReason = null;
    rt.generation++;
    const gen = rt.generation;
    recs.update(id, (v) => {
      v.state = 'creating';
      v.lastError = null;
      this.resetBoot(v);
    });
    const fail = async (msg: string): Promise<never> => {
      await launcher.stop(r, 0).catch(() => {});
      recs.update(id, (v) => {
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
        const ak = await launcher.provisionAk(r).catch((e: unknown) => {
          throw new LaunchError(`could not provision the VM's attestation key in its swtpm: ${e instanceof Error ? e.message : String(e)}`);
        });
        recs.update(id, (v) => {
          v.attestation.akPub = ak.pub;
          v.attestation.akFingerprint = ak.fingerprint;
        });
      }
      if (!r.sshHostKey) {
        const key = await ensureSshHostKey(r.paths.dir);
        recs.update(id, (v) => (v.sshHostKey = key));
      }
      if (!r.sshKey) {
        const key = await ensureManagerKey(r.paths.sshKey, r.id);
        recs.update(id, (v) => (v.sshKey = key));
      }
      recs.update(id, (v) => (v.paths.serialSocket = join(v.paths.dir, 'serial.sock')));
      if (lan && !r.lease) recs.update(id, (v) => (v.lease = this.leaseOn(v.network, v.id)));
      const sw = lan && r.lease ? { sock: await lan.up(r.network), mac: r.lease.mac } : null;
      const launched = await launcher.start(r, {
        boot: this.bootSource(r),
        lan: sw,
        internet: sw !== null && this.internetNow(r),
        incoming,
        network: this.o.networkMode?.(r.network) ?? (r.network === 'nat' ? 'nat' : 'restricted'),
        onPid: (kind, pid) => recs.update(id, (v) => (v.pids[kind] = pid)),
      });
      if (gen !== sup.runtime(id).generation) return;
      recs.update(id, (v) => {
        v.pids = { ...launched.pids };
        v.ports = { ssh: launched.sshPort };
      });
      await sup.watchResets(id, () => this.guestReset(id));
      recs.update(id, (v) => {
        v.state = 'booting';
        v.startedAt = now();
        v.durations.installSeconds = secondsBetween(v.createdAt, v.startedAt);
        v.attestation.userDataReleased = !v.requireAttestation;
      });
      sup.supervise(id, launched.qemuExit, launched.swtpmExit);
      sup.armBootTimer(id, this.o.timeouts.bootMs);
      if (incoming !== undefined) void this.attestResumed(id, gen);
    } catch (e) {
      await fail(e instanceof Error ? e.message : String(e));
    }
  }

  /**
   * A resumed guest is ready once its fresh quote verifies (clean-state.ts); its user-data is released
   * then. Its clock is set to the host's first (when that fails, the log says so; it stays ready).
   */
  private async attestResumed(id: string, gen: number) {
    const r = this.o.recs.get(id);
    let pcrs: number[] | null = null;
    try {
      pcrs = readPolicy(getImage(this.o.stateDir, r.image).dir)?.pcrs.ready ?? null;
    } catch {
      /* the quote says what is missing */
    }
    // Still this boot of a live VM (not stopped, reset or deleted while we waited)?
    const current = () => {
      const v = this.o.recs.find(id);
      return v && gen === this.o.sup.runtime(id).generation && LIVE.includes(v.state) ? v : null;
    };
    const why = await quoteAfterResume(r, pcrs, this.o.timeouts.bootMs, () => current() !== null);
    if (!current()) return;
    // The clock is set before the guest counts as ready again.
    const clock = await setGuestClock(r);
    if (clock !== null) this.o.log?.(`vm ${id}: resumed, but its clock was not set to the host's: ${clock}`);
    const v = current();
    if (!v) return;
    const verified = why === null && v.attestation.ready?.verified === true && v.attestation.nonceIssuedAt !== null;
    if (verified || !v.requireAttestation) {
      this.o.recs.update(id, (x) => (x.attestation.userDataReleased = true));
      this.o.guest.ready(id);
    } else {
      this.o.recs.update(id, (x) => {
        const said = why ?? x.attestation.ready?.message ?? 'no quote arrived';
        x.lastError = `resumed from its clean state, but its fresh quote did not verify: ${said}`;
      });
    }
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
}
