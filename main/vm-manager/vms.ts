/**
 * The VM service: records persisted as JSON under <state>/vms/<id>/vm.json (user-data in its own
 * file), one detached QEMU + swtpm per VM, states with a timeout per transition, stop escalation,
 * and reattach/cleanup of live processes when the manager restarts.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { vmAsset } from './assets';
import { qemuArgv, type Accel, type QemuSpec, type VmNetwork } from './argv';
import { tailLines } from './console';
import { VmmError } from './errors';
import { getImage, writeJsonAtomic } from './images';
import { findTool } from './finders';
import { aliveWith, freeLoopbackPort, pidsMatching, readPid, removePid, signal, startDetached, terminate, waitGone, writePid } from '../lib/procs';
import { sleep } from '../lib/sleep';
import { Qmp, openQmpWhenReady } from './qmp';
import { provisionVmAk } from './attest/provision';
import { ensureSshHostKey, type SshHostKey } from './ssh-host-key';
import { capConsole, CONSOLE_MAX_BYTES, metadataForwardArgv, watchGuestResets } from './guest-limits';

export const METADATA_PROXY = vmAsset('guest/metadata-proxy.cjs');

export type VmState = 'creating' | 'booting' | 'attesting' | 'ready' | 'running' | 'stopping' | 'stopped' | 'failed' | 'deleting';
export type WaitFor = 'none' | 'attested' | 'ready';
const LIVE: VmState[] = ['booting', 'attesting', 'ready', 'running'];

export interface StageResult {
  verified: boolean;
  message: string;
  at: string;
  failed: string | null;
  pcrs: Record<string, string>;
  mismatches: { pcr: string; expected: string; got: string }[];
  learned: Record<string, string>;
}

export interface VmRecord {
  id: string;
  name: string;
  image: string;
  cpus: number;
  memoryMiB: number;
  diskGiB: number;
  requireAttestation: boolean;
  waitFor: WaitFor;
  /** 'restricted' (default): the guest reaches the metadata service and its forwards only; 'nat': outbound too */
  network: VmNetwork;
  accel: Accel;
  state: VmState;
  createdAt: string;
  startedAt: string | null;
  /** first guest contact with the metadata service in this boot */
  bootedAt: string | null;
  readyAt: string | null;
  stoppedAt: string | null;
  /** seconds: create→QEMU running (install), QEMU start→first guest contact (boot), QEMU start→READY (ready) */
  durations: { installSeconds: number | null; bootSeconds: number | null; readySeconds: number | null };
  lastError: string | null;
  hasUserData: boolean;
  attestation: {
    required: boolean;
    /** learn mode for this VM only (a "Learn golden values" boot) */
    learn?: boolean;
    userDataReleased: boolean;
    nonceIssuedAt: string | null;
    /** the AK the manager made in this VM's swtpm before its first boot (attest/provision.ts): fingerprint and base64 TPM2B_PUBLIC */
    akFingerprint: string | null;
    akPub: string | null;
    initrd: StageResult | null;
    ready: StageResult | null;
  };
  /** the guest's SSH host key, made by the manager and served to the guest only after attestation (ssh-host-key.ts) */
  sshHostKey: SshHostKey | null;
  pids: { qemu: number | null; swtpm: number | null };
  /** Host ports (127.0.0.1) forwarded into the guest while QEMU runs; ssh → the guest's port 22. */
  ports: { ssh: number | null };
  /** serialSocket: null for a VM last started by a vm-manager without the serial socket. */
  paths: { dir: string; console: string; serialSocket: string | null; tpmState: string; swtpmSocket: string; ovmfVars: string; qmpSocket: string; userData: string; disk: string | null };
}

export interface CreateInput {
  name: string;
  image: string;
  cpus: number;
  memoryMiB: number;
  diskGiB: number;
  userData: string | null;
  requireAttestation: boolean;
  waitFor: WaitFor;
  network?: VmNetwork;
  /** a learn boot (golden.ts): PCRs without a golden value are accepted for this VM only */
  learnGolden?: boolean;
}

export interface Timeouts {
  /** QEMU up and answering QMP */
  startMs: number;
  /** QEMU start → READY; after it the VM is "running" with lastError saying so */
  bootMs: number;
  /** QMP system_powerdown → SIGTERM */
  powerdownMs: number;
  /** SIGTERM → SIGKILL */
  termMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = { startMs: 20_000, bootMs: 240_000, powerdownMs: 15_000, termMs: 5_000 };

export interface VmServiceOptions {
  stateDir: string;
  accel: Accel;
  ovmf: { code: string; vars: string };
  metadataSocket: string;
  nodeBinary?: string;
  timeouts?: Partial<Timeouts>;
  /** console.log cap while a VM runs (default CONSOLE_MAX_BYTES) */
  consoleMaxBytes?: number;
  log?: (msg: string) => void;
}

interface Runtime {
  stopping: boolean;
  failReason: string | null;
  bootTimer: NodeJS.Timeout | null;
  poll: NodeJS.Timeout | null;
  generation: number;
  /** stops the QMP event watch (guest resets) */
  unwatch: (() => void) | null;
}

const now = () => new Date().toISOString();
const secondsBetween = (a: string | null, b: string | null) => (a && b ? Math.round((Date.parse(b) - Date.parse(a)) / 100) / 10 : null);

export class VmService {
  readonly events = new EventEmitter();
  private recs = new Map<string, VmRecord>();
  private rt = new Map<string, Runtime>();
  readonly timeouts: Timeouts;
  private readonly vmsDir: string;

  constructor(private readonly o: VmServiceOptions) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
    this.vmsDir = join(o.stateDir, 'vms');
    mkdirSync(this.vmsDir, { recursive: true });
    this.events.setMaxListeners(1000);
  }

  private log(msg: string) {
    this.o.log?.(msg);
  }

  // ---- records -------------------------------------------------------------------------------

  list(): VmRecord[] {
    return [...this.recs.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  get(id: string): VmRecord {
    const r = this.recs.get(id);
    if (!r) throw new VmmError('not_found', `no VM with id "${id}": list them with GET /api/v1/vms`);
    return r;
  }

  private save(r: VmRecord) {
    writeJsonAtomic(join(r.paths.dir, 'vm.json'), r);
    this.events.emit('change', r);
  }

  private update(id: string, fn: (r: VmRecord) => void): VmRecord {
    const r = this.recs.get(id);
    if (!r) throw new VmmError('not_found', `no VM with id "${id}"`);
    fn(r);
    this.save(r);
    return r;
  }

  private runtime(id: string): Runtime {
    let r = this.rt.get(id);
    if (!r) {
      r = { stopping: false, failReason: null, bootTimer: null, poll: null, generation: 0, unwatch: null };
      this.rt.set(id, r);
    }
    return r;
  }

  consoleTail(id: string, lines: number): string[] {
    return tailLines(this.get(id).paths.console, lines);
  }

  private errorWithTail(r: VmRecord, message: string, lines = 40): string {
    const tail = tailLines(r.paths.console, lines);
    return tail.length ? `${message}\n--- last ${tail.length} console lines ---\n${tail.join('\n')}` : `${message} (the console is empty)`;
  }

  readUserData(id: string): string | null {
    const r = this.get(id);
    if (!r.hasUserData || !existsSync(r.paths.userData)) return null;
    return readFileSync(r.paths.userData, 'utf8');
  }

  // ---- create / start ------------------------------------------------------------------------

  async create(input: CreateInput): Promise<VmRecord> {
    const image = getImage(this.o.stateDir, input.image);
    if (this.list().some((v) => v.name === input.name && v.state !== 'deleting')) {
      throw new VmmError('conflict', `a VM named "${input.name}" exists; pick another name or delete it first`);
    }
    if (image.kind === 'disk' && image.virtualSizeBytes && input.diskGiB * 1024 ** 3 < image.virtualSizeBytes) {
      throw new VmmError('invalid_request', `disk_gib ${input.diskGiB} is smaller than image "${image.name}" (${Math.ceil(image.virtualSizeBytes / 1024 ** 3)} GiB)`);
    }
    let id = randomBytes(4).toString('hex');
    while (this.recs.has(id)) id = randomBytes(4).toString('hex');
    const dir = join(this.vmsDir, id);
    const r: VmRecord = {
      id, name: input.name, image: image.name, cpus: input.cpus, memoryMiB: input.memoryMiB, diskGiB: input.diskGiB,
      requireAttestation: input.requireAttestation, waitFor: input.waitFor, network: input.network ?? 'restricted', accel: this.o.accel,
      state: 'creating', createdAt: now(), startedAt: null, bootedAt: null, readyAt: null, stoppedAt: null,
      durations: { installSeconds: null, bootSeconds: null, readySeconds: null },
      lastError: null, hasUserData: input.userData !== null && input.userData !== '',
      attestation: { required: input.requireAttestation, ...(input.learnGolden ? { learn: true } : {}), userDataReleased: false, nonceIssuedAt: null, akFingerprint: null, akPub: null, initrd: null, ready: null },
      sshHostKey: null,
      pids: { qemu: null, swtpm: null },
      ports: { ssh: null },
      paths: {
        dir, console: join(dir, 'console.log'), serialSocket: join(dir, 'serial.sock'), tpmState: join(dir, 'tpm'), swtpmSocket: join(dir, 'tpm', 'swtpm.sock'),
        ovmfVars: join(dir, 'OVMF_VARS.fd'), qmpSocket: join(dir, 'qmp.sock'), userData: join(dir, 'user-data'),
        disk: image.kind === 'disk' ? join(dir, 'disk.qcow2') : null,
      },
    };
    mkdirSync(r.paths.tpmState, { recursive: true });
    this.recs.set(id, r);
    try {
      if (r.hasUserData) writeFileSync(r.paths.userData, input.userData ?? '', { mode: 0o600 });
      copyFileSync(this.o.ovmf.vars, r.paths.ovmfVars);
      if (r.paths.disk && image.disk) {
        execFileSync(findTool('qemu-img') ?? 'qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', join(image.dir, image.disk), r.paths.disk, `${input.diskGiB}G`], { stdio: ['ignore', 'ignore', 'pipe'] });
      }
      this.save(r);
    } catch (e) {
      this.recs.delete(id);
      rmSync(dir, { recursive: true, force: true });
      throw new VmmError('internal', `could not prepare VM files: ${e instanceof Error ? e.message : String(e)}`);
    }
    await this.launch(id);
    return this.get(id);
  }

  async start(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (r.state !== 'stopped' && r.state !== 'failed') throw new VmmError('conflict', `VM ${id} is ${r.state}; start works only from stopped or failed`);
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

  private async launch(id: string): Promise<void> {
    const r = this.get(id);
    const rt = this.runtime(id);
    rt.stopping = false;
    rt.failReason = null;
    rt.generation++;
    const gen = rt.generation;
    this.update(id, (v) => {
      v.state = 'creating';
      v.lastError = null;
      this.resetBoot(v);
    });
    const fail = (msg: string) => {
      this.killAll(r).catch(() => {});
      this.update(id, (v) => {
        v.state = 'failed';
        v.lastError = msg;
        v.stoppedAt = now();
        v.pids = { qemu: null, swtpm: null };
        v.ports = { ssh: null };
      });
      throw new VmmError('vm_failed', `VM ${id}: ${msg.split('\n')[0]}; see GET /api/v1/vms/${id} (lastError) or delete it`);
    };
    // The AK is the manager's: made in the VM's swtpm before the guest runs, and pinned (a record from
    // before host provisioning gets one now, replacing any key its guest made).
    if (!r.attestation.akPub) {
      try {
        const ak = await provisionVmAk(r.paths.tpmState);
        this.update(id, (v) => {
          v.attestation.akPub = ak.pub.toString('base64');
          v.attestation.akFingerprint = ak.fingerprint;
        });
      } catch (e) {
        return fail(`could not provision the VM's attestation key in its swtpm: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    if (!r.sshHostKey) {
      try {
        const key = await ensureSshHostKey(r.paths.dir);
        this.update(id, (v) => (v.sshHostKey = key));
      } catch (e) {
        return fail(e instanceof Error ? e.message : String(e));
      }
    }
    // swtpm first: QEMU connects to its socket at start.
    rmSync(r.paths.swtpmSocket, { force: true });
    const swtpmLog = join(r.paths.dir, 'swtpm.log');
    let swtpm;
    try {
      swtpm = startDetached(findTool('swtpm') ?? 'swtpm', ['socket', '--tpm2', '--tpmstate', `dir=${r.paths.tpmState}`, '--ctrl', `type=unixio,path=${r.paths.swtpmSocket}`, '--log', 'level=1'], swtpmLog);
    } catch (e) {
      return fail(`swtpm did not start: ${e instanceof Error ? e.message : String(e)}`);
    }
    writePid(join(r.paths.dir, 'swtpm.pid'), swtpm.pid);
    this.update(id, (v) => (v.pids.swtpm = swtpm.pid));
    const sockEnd = Date.now() + 5000;
    while (!existsSync(r.paths.swtpmSocket) && Date.now() < sockEnd && aliveWith(swtpm.pid, r.paths.tpmState)) await sleep(20);
    if (!existsSync(r.paths.swtpmSocket)) return fail(`swtpm did not open its socket within 5 s: ${tailLines(swtpmLog, 5).join(' | ') || 'no output'}`);

    const serialSocket = join(r.paths.dir, 'serial.sock');
    rmSync(serialSocket, { force: true });
    // A fresh free port each start: the last one may have been taken meanwhile.
    const sshHostPort = await freeLoopbackPort();
    this.update(id, (v) => {
      v.paths.serialSocket = serialSocket;
      v.ports = { ssh: sshHostPort };
    });
    const spec: QemuSpec = {
      id: r.id, accel: r.accel, cpus: r.cpus, memoryMib: r.memoryMiB, ovmfCode: this.o.ovmf.code, ovmfVars: r.paths.ovmfVars,
      boot: this.bootSource(r), consoleFile: r.paths.console, serialSocket, qmpSocket: r.paths.qmpSocket, swtpmSocket: r.paths.swtpmSocket,
      metadataProxy: metadataForwardArgv(r.paths.dir, [this.o.nodeBinary ?? process.execPath, METADATA_PROXY, this.o.metadataSocket, r.id]),
      sshHostPort, network: r.network ?? 'restricted', qmpEventsSocket: this.eventsSocket(r),
    };
    writeFileSync(r.paths.console, ''); // QEMU appends (logappend=on, so capConsole can truncate it)
    rmSync(r.paths.qmpSocket, { force: true });
    rmSync(this.eventsSocket(r), { force: true });
    const qemuLog = join(r.paths.dir, 'qemu.log');
    let qemu;
    try {
      qemu = startDetached(findTool('qemu-system-x86_64') ?? 'qemu-system-x86_64', qemuArgv(spec), qemuLog);
    } catch (e) {
      return fail(`qemu did not start: ${e instanceof Error ? e.message : String(e)}`);
    }
    writePid(join(r.paths.dir, 'qemu.pid'), qemu.pid);
    this.update(id, (v) => {
      v.pids.qemu = qemu.pid;
    });
    let qmp: Qmp;
    try {
      qmp = await openQmpWhenReady(r.paths.qmpSocket, this.timeouts.startMs, () => aliveWith(qemu.pid, r.paths.dir));
      qmp.close();
    } catch (e) {
      return fail(`qemu did not come up: ${tailLines(qemuLog, 5).join(' | ') || (e instanceof Error ? e.message : String(e))}`);
    }
    if (gen !== rt.generation) return;
    await this.watchResets(id);
    this.update(id, (v) => {
      v.state = 'booting';
      v.startedAt = now();
      v.durations.installSeconds = secondsBetween(v.createdAt, v.startedAt);
      v.attestation.userDataReleased = !v.requireAttestation;
    });
    this.supervise(id, qemu.exited, swtpm.exited);
    this.armBootTimer(id, this.timeouts.bootMs);
  }

  private eventsSocket(r: VmRecord): string {
    return join(r.paths.dir, 'qmp-events.sock');
  }

  /** Follows QEMU's events: a reset the guest made starts a new boot whose user-data is withheld again. */
  private async watchResets(id: string) {
    const r = this.get(id);
    const rt = this.runtime(id);
    rt.unwatch?.();
    rt.unwatch = null;
    if (!existsSync(this.eventsSocket(r))) return; // a QEMU started before the events monitor
    try {
      rt.unwatch = await watchGuestResets(this.eventsSocket(r), () => this.guestReset(id));
    } catch (e) {
      this.log(`vm ${id}: no QMP event watch, so a reboot from inside the guest is not re-gated: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private guestReset(id: string) {
    const r = this.recs.get(id);
    if (!r || !LIVE.includes(r.state)) return;
    this.log(`vm ${id}: the guest reset itself; user-data is withheld until a new initrd quote verifies`);
    this.newBoot(id);
  }

  /** A reset (ours or the guest's): a new boot whose attestation starts over and whose user-data is withheld again. */
  private newBoot(id: string) {
    this.update(id, (v) => {
      this.resetBoot(v);
      v.state = 'booting';
      v.startedAt = now();
      v.lastError = null;
    });
    this.armBootTimer(id, this.timeouts.bootMs);
  }

  private bootSource(r: VmRecord): QemuSpec['boot'] {
    const img = getImage(this.o.stateDir, r.image);
    if (img.kind === 'kernel' && img.kernel && img.initrd) {
      return { kind: 'kernel', kernel: join(img.dir, img.kernel), initrd: join(img.dir, img.initrd), append: img.cmdline ?? '' };
    }
    if (!r.paths.disk) throw new VmmError('internal', `VM ${r.id} has a disk image but no overlay`);
    return { kind: 'disk', overlay: r.paths.disk };
  }

  private armBootTimer(id: string, ms: number) {
    const rt = this.runtime(id);
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    rt.bootTimer = setTimeout(() => {
      rt.bootTimer = null;
      const r = this.recs.get(id);
      if (!r || (r.state !== 'booting' && r.state !== 'attesting')) return;
      const why = r.requireAttestation && !r.attestation.userDataReleased
        ? `no READY within ${Math.round(ms / 1000)} s: attestation did not verify, so user-data was withheld (${r.attestation.initrd?.message ?? 'no initrd quote arrived'})`
        : `no READY within ${Math.round(ms / 1000)} s; the VM keeps running and a late READY still makes it ready`;
      this.update(id, (v) => {
        v.state = 'running';
        v.lastError = this.errorWithTail(v, why);
      });
    }, Math.max(0, ms));
    rt.bootTimer.unref();
  }

  // ---- supervision ---------------------------------------------------------------------------

  /**
   * Watches both processes. Our own children report their exit; reattached ones are polled
   * through /proc. Either exit ends the VM: swtpm is stopped whenever QEMU exits, and QEMU is
   * stopped when its TPM disappears.
   */
  private supervise(id: string, qemuExit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null, swtpmExit: Promise<unknown> | null) {
    const r = this.get(id);
    const rt = this.runtime(id);
    const gen = rt.generation;
    const qpid = r.pids.qemu;
    const spid = r.pids.swtpm;
    let done = false;
    const onQemuGone = (how: string, clean: boolean) => {
      if (done || gen !== rt.generation) return;
      done = true;
      if (rt.poll) clearInterval(rt.poll);
      rt.poll = null;
      this.qemuGone(id, how, clean).catch((e) => this.log(`vm ${id}: cleanup after qemu exit failed: ${e}`));
    };
    if (qemuExit) {
      qemuExit.then(({ code, signal: sig }) => onQemuGone(sig ? `qemu was killed by ${sig}` : `qemu exited with code ${code}`, code === 0 && !sig));
    }
    if (swtpmExit) {
      swtpmExit.then(() => {
        if (done || gen !== rt.generation || rt.stopping) return;
        rt.failReason = 'swtpm (the VM\'s TPM) exited unexpectedly, so the VM was stopped';
        if (qpid) signal(qpid, 'SIGTERM');
      });
    }
    let ticks = 0;
    const consoleMax = this.o.consoleMaxBytes ?? CONSOLE_MAX_BYTES;
    rt.poll = setInterval(() => {
      if (done || gen !== rt.generation) return;
      if (++ticks % 3 === 0 && capConsole(r.paths.console, consoleMax)) this.log(`vm ${id}: console.log over ${consoleMax} bytes, older half dropped`);
      if (!qemuExit && qpid && !aliveWith(qpid, r.paths.dir)) onQemuGone('qemu exited while vm-manager was not its parent (exit status unknown)', false);
      if (!swtpmExit && spid && !rt.stopping && !rt.failReason && !aliveWith(spid, r.paths.tpmState)) {
        rt.failReason = 'swtpm (the VM\'s TPM) exited unexpectedly, so the VM was stopped';
        if (qpid) signal(qpid, 'SIGTERM');
      }
    }, 300);
    rt.poll.unref();
  }

  private async qemuGone(id: string, how: string, clean: boolean) {
    const r = this.recs.get(id);
    if (!r) return;
    const rt = this.runtime(id);
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    rt.bootTimer = null;
    rt.unwatch?.();
    rt.unwatch = null;
    if (r.pids.swtpm) await terminate(r.pids.swtpm, r.paths.tpmState, 2000);
    this.killProxies(r);
    removePid(join(r.paths.dir, 'qemu.pid'));
    removePid(join(r.paths.dir, 'swtpm.pid'));
    if (rt.stopping || r.state === 'deleting') return; // stop()/delete() set the final state
    this.update(id, (v) => {
      v.pids = { qemu: null, swtpm: null };
      v.ports = { ssh: null };
      v.stoppedAt = now();
      if (rt.failReason) {
        v.state = 'failed';
        v.lastError = this.errorWithTail(v, rt.failReason);
      } else if (clean) {
        v.state = 'stopped';
        v.lastError = null;
      } else {
        v.state = 'failed';
        v.lastError = this.errorWithTail(v, `${how}${v.readyAt ? '' : ` before READY (state was ${v.state})`}`);
      }
    });
  }

  private async killAll(r: VmRecord) {
    if (r.pids.qemu) await terminate(r.pids.qemu, r.paths.dir, this.timeouts.termMs);
    if (r.pids.swtpm) await terminate(r.pids.swtpm, r.paths.tpmState, 2000);
  }

  // ---- stop / reboot / delete ----------------------------------------------------------------

  async stop(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (!LIVE.includes(r.state)) throw new VmmError('conflict', `VM ${id} is ${r.state}; stop works only while it runs`);
    const rt = this.runtime(id);
    rt.stopping = true;
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    this.update(id, (v) => (v.state = 'stopping'));
    const how = await this.stopProcesses(r, this.timeouts.powerdownMs);
    this.update(id, (v) => {
      v.state = 'stopped';
      v.stoppedAt = now();
      v.pids = { qemu: null, swtpm: null };
      v.ports = { ssh: null };
      v.lastError = how === 'powerdown' ? null : `the guest did not power down within ${Math.round(this.timeouts.powerdownMs / 1000)} s, so QEMU got ${how === 'term' ? 'SIGTERM' : 'SIGKILL'}`;
    });
    rt.stopping = false;
    rt.generation++;
    return this.get(id);
  }

  /** QMP system_powerdown → wait → SIGTERM → SIGKILL; then swtpm. */
  private async stopProcesses(r: VmRecord, powerdownMs: number): Promise<'powerdown' | 'term' | 'kill' | 'gone'> {
    let how: 'powerdown' | 'term' | 'kill' | 'gone' = 'gone';
    const qpid = r.pids.qemu;
    if (qpid && aliveWith(qpid, r.paths.dir)) {
      let asked = false;
      if (powerdownMs > 0) {
        try {
          const q = await Qmp.open(r.paths.qmpSocket, 2000);
          await q.run('system_powerdown');
          q.close();
          asked = true;
        } catch {
          asked = false;
        }
      }
      if (asked && (await waitGone(() => aliveWith(qpid, r.paths.dir), powerdownMs))) how = 'powerdown';
      else how = (await terminate(qpid, r.paths.dir, this.timeouts.termMs)) === 'kill' ? 'kill' : 'term';
    }
    if (r.pids.swtpm) await terminate(r.pids.swtpm, r.paths.tpmState, 2000);
    this.killProxies(r);
    removePid(join(r.paths.dir, 'qemu.pid'));
    removePid(join(r.paths.dir, 'swtpm.pid'));
    return how;
  }

  /** Metadata proxies QEMU started for this VM die with their connection; these catch a hung one. */
  private killProxies(r: VmRecord) {
    for (const pid of pidsMatching([METADATA_PROXY, this.o.metadataSocket, r.id])) signal(pid, 'SIGKILL');
  }

  async reboot(id: string): Promise<VmRecord> {
    const r = this.get(id);
    if (!LIVE.includes(r.state)) throw new VmmError('conflict', `VM ${id} is ${r.state}; reboot works only while it runs`);
    try {
      const q = await Qmp.open(r.paths.qmpSocket, 3000);
      await q.run('system_reset');
      q.close();
    } catch (e) {
      throw new VmmError('unavailable', `VM ${id}: QEMU did not take the reset (${e instanceof Error ? e.message : String(e)}); stop and start it instead`);
    }
    this.newBoot(id);
    return this.get(id);
  }

  async delete(id: string): Promise<void> {
    const r = this.get(id);
    if (r.state === 'deleting') throw new VmmError('conflict', `VM ${id} is already being deleted`);
    const rt = this.runtime(id);
    rt.stopping = true;
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    this.update(id, (v) => (v.state = 'deleting'));
    await this.stopProcesses(r, 0);
    if (rt.poll) clearInterval(rt.poll);
    rt.generation++;
    this.recs.delete(id);
    this.rt.delete(id);
    this.events.emit('deleted', id);
    const trash = join(this.vmsDir, `.deleted-${id}-${Date.now()}`);
    renameSync(r.paths.dir, trash);
    rmSync(trash, { recursive: true, force: true });
  }

  // ---- guest events (from the metadata service) ----------------------------------------------

  guestContact(id: string) {
    const r = this.recs.get(id);
    if (!r || r.bootedAt || (r.state !== 'booting' && r.state !== 'attesting' && r.state !== 'running')) return;
    this.update(id, (v) => {
      v.bootedAt = now();
      v.durations.bootSeconds = secondsBetween(v.startedAt, v.bootedAt);
    });
  }

  nonceIssued(id: string) {
    this.guestContact(id);
    this.update(id, (v) => {
      v.attestation.nonceIssuedAt = now();
      if (v.state === 'booting') v.state = 'attesting';
    });
  }

  recordQuote(id: string, result: StageResult, stage: 'initrd' | 'ready') {
    this.update(id, (v) => {
      v.attestation[stage] = result;
      if (result.verified && stage === 'initrd') v.attestation.userDataReleased = true;
    });
  }

  /** Marks READY. A VM that requires attestation must have had its user-data released first. */
  guestReady(id: string): boolean {
    const r = this.get(id);
    if (!['booting', 'attesting', 'running'].includes(r.state)) return false;
    if (r.requireAttestation && !r.attestation.userDataReleased) return false;
    const rt = this.runtime(id);
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    rt.bootTimer = null;
    this.update(id, (v) => {
      v.state = 'ready';
      v.readyAt = now();
      v.durations.readySeconds = secondsBetween(v.startedAt, v.readyAt);
      if (v.lastError?.startsWith('no READY within')) v.lastError = null;
    });
    return true;
  }

  // ---- waiting -------------------------------------------------------------------------------

  /** Resolves when the milestone is reached; vm_failed when the VM ends first; timeout after ms. */
  waitFor(id: string, milestone: WaitFor, ms: number): Promise<VmRecord> {
    const reached = (r: VmRecord) =>
      milestone === 'none' ||
      (milestone === 'ready' && r.state === 'ready') ||
      (milestone === 'attested' && r.bootedAt !== null && r.attestation.userDataReleased && (r.attestation.initrd?.verified || !r.requireAttestation));
    const ended = (r: VmRecord) => r.state === 'failed' || r.state === 'stopped' || r.state === 'deleting' || (r.state === 'running' && milestone !== 'none');
    return new Promise((resolve, reject) => {
      const check = (r: VmRecord) => {
        if (r.id !== id) return;
        if (reached(r)) finish(() => resolve(r));
        else if (ended(r)) finish(() => reject(new VmmError('vm_failed', `VM ${id} is ${r.state} before "${milestone}": ${r.lastError ?? 'no error recorded'}`)));
      };
      const onDeleted = (d: string) => d === id && finish(() => reject(new VmmError('vm_failed', `VM ${id} was deleted while waiting for "${milestone}"`)));
      const timer = setTimeout(() => finish(() => reject(new VmmError('timeout', `VM ${id} did not reach "${milestone}" within ${Math.round(ms / 1000)} s; it keeps running: GET /api/v1/vms/${id}`))), ms);
      const finish = (f: () => void) => {
        clearTimeout(timer);
        this.events.off('change', check);
        this.events.off('deleted', onDeleted);
        f();
      };
      this.events.on('change', check);
      this.events.on('deleted', onDeleted);
      check(this.get(id));
    });
  }

  // ---- restart: reattach or clean up ---------------------------------------------------------

  /** Loads every record; reattaches to live VMs and cleans up after dead ones. Call once at start. */
  async recover(): Promise<{ reattached: string[]; cleaned: string[] }> {
    const reattached: string[] = [];
    const cleaned: string[] = [];
    for (const name of readdirSync(this.vmsDir)) {
      const dir = join(this.vmsDir, name);
      if (name.startsWith('.deleted-')) {
        rmSync(dir, { recursive: true, force: true });
        continue;
      }
      let r: VmRecord;
      try {
        r = JSON.parse(readFileSync(join(dir, 'vm.json'), 'utf8')) as VmRecord;
      } catch {
        continue;
      }
      if (r.paths.dir !== dir) r.paths = { ...r.paths, dir };
      // A record from before the serial socket: its QEMU (if alive) has none; the next start adds it.
      if (r.paths.serialSocket === undefined) r.paths.serialSocket = null;
      // A record from before SSH forwarding: its QEMU (if alive) forwards nothing.
      if (r.ports === undefined) r.ports = { ssh: null };
      // Records from before network fencing and host-made AKs: fenced from the next start, AK made then.
      if (r.network === undefined) r.network = 'restricted';
      if (r.attestation.akPub === undefined) r.attestation.akPub = null;
      if (r.sshHostKey === undefined) r.sshHostKey = null;
      this.recs.set(r.id, r);
      const qpid = readPid(join(dir, 'qemu.pid')) ?? r.pids.qemu;
      const spid = readPid(join(dir, 'swtpm.pid')) ?? r.pids.swtpm;
      const qAlive = aliveWith(qpid, dir);
      const sAlive = aliveWith(spid, r.paths.tpmState);
      if (r.state === 'deleting') {
        r.pids = { qemu: qpid, swtpm: spid };
        await this.stopProcesses(r, 0);
        this.recs.delete(r.id);
        rmSync(dir, { recursive: true, force: true });
        cleaned.push(r.id);
        continue;
      }
      if (LIVE.includes(r.state) && qAlive && sAlive) {
        r.pids = { qemu: qpid, swtpm: spid };
        this.save(r);
        this.runtime(r.id).generation++;
        this.supervise(r.id, null, null);
        await this.watchResets(r.id);
        if (r.state === 'booting' || r.state === 'attesting') {
          const elapsed = r.startedAt ? Date.now() - Date.parse(r.startedAt) : 0;
          this.armBootTimer(r.id, this.timeouts.bootMs - elapsed);
        }
        reattached.push(r.id);
        continue;
      }
      // Anything half-alive is stopped; the record says what happened.
      const wasLive = LIVE.includes(r.state) || r.state === 'creating';
      if (qAlive || sAlive) {
        r.pids = { qemu: qAlive ? qpid : null, swtpm: sAlive ? spid : null };
        await this.stopProcesses(r, 0);
      }
      removePid(join(dir, 'qemu.pid'));
      removePid(join(dir, 'swtpm.pid'));
      if (wasLive || r.state === 'stopping') {
        const why = r.state === 'stopping'
          ? null
          : qAlive && !sAlive
            ? 'swtpm was gone when vm-manager restarted, so QEMU was stopped'
            : r.state === 'creating'
              ? 'vm-manager stopped while the VM was being created'
              : 'qemu exited while vm-manager was not running (exit status unknown)';
        r.state = why ? 'failed' : 'stopped';
        r.lastError = why ? this.errorWithTail(r, why) : r.lastError;
        r.stoppedAt = now();
        r.pids = { qemu: null, swtpm: null };
        r.ports = { ssh: null };
        this.save(r);
        cleaned.push(r.id);
      }
    }
    return { reattached, cleaned };
  }

  /** Stops supervision timers (the VMs keep running: they are detached). */
  detach() {
    for (const rt of this.rt.values()) {
      rt.unwatch?.();
      rt.unwatch = null;
      if (rt.poll) clearInterval(rt.poll);
      if (rt.bootTimer) clearTimeout(rt.bootTimer);
      rt.generation++;
    }
  }

  /** Stops every running VM (for `serve --stop-vms-on-exit` and tests). */
  async stopAll() {
    await Promise.all(this.list().filter((r) => LIVE.includes(r.state)).map((r) => this.stop(r.id).catch(() => {})));
  }
}
