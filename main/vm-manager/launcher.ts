/**
 * Launching a VM's processes, behind the `Launcher` interface so the VM service's states and
 * supervision can be tested without QEMU (test/vm-manager/fake-launcher.ts). `QemuLauncher` is the
 * real one: one detached swtpm + QEMU per VM, QMP for powerdown/reset/forwards, pid files in the
 * VM's dir so a restarted manager can reattach.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { vmAsset } from './assets';
import { qemuArgv, shellWord, type Accel, type QemuSpec, type VmNetwork } from './argv';
import { tailLines } from './console';
import { findTool } from './finders';
import {
  aliveWith,
  freeLoopbackPort,
  pidsMatching,
  readPid,
  removePid,
  signal,
  startDetached,
  terminate,
  waitGone,
  writePid,
} from '../lib/procs';
import { sleep } from '../lib/sleep';
import { Qmp, openQmpWhenReady } from './qmp';
import { provisionVmAk } from './attest/provision';
import { GUEST_HOST_ALIAS } from '../vm-api/povdesk';
import { hostForwardArgv, metadataForwardArgv, watchGuestResets } from './guest-limits';
import type { VmRecord } from './vm-record';

export const METADATA_PROXY = vmAsset('guest/metadata-proxy.cjs');
export const HOST_FORWARD_PROXY = vmAsset('guest/host-forward.cjs');

export type ProcessExit = { code: number | null; signal: NodeJS.Signals | null };

export interface Launched {
  pids: { qemu: number; swtpm: number };
  /** host port on 127.0.0.1 forwarded to the guest's port 22 */
  sshPort: number;
  qemuExit: Promise<ProcessExit>;
  swtpmExit: Promise<unknown>;
}

/** A start that did not get as far as a running QEMU; the message says which step and why. */
export class LaunchError extends Error {}

export interface StartOptions {
  boot: QemuSpec['boot'];
  network: VmNetwork;
  /** the network's switch (its control directory) and the VM's MAC on it; null: no second NIC */
  lan: { sock: string; mac: string } | null;
  /** Internet access: the VM's own passt on a third NIC (see QemuSpec.internet) */
  internet?: boolean;
  /** a memory snapshot (snapshots.ts) to resume from instead of booting */
  incoming?: string;
  /** called as soon as a process exists, so a crash of the manager mid-start leaves a pid to clean up */
  onPid: (kind: 'qemu' | 'swtpm', pid: number) => void;
}

export type StopHow = 'powerdown' | 'term' | 'kill' | 'gone';

export interface Launcher {
  readonly accel: Accel;
  /** Files a new VM needs before its first start: its firmware variables and disk overlay. */
  prepare(r: VmRecord, baseDisk: string | null): void;
  /** The VM's attestation key, made in its swtpm before the guest ever runs. */
  provisionAk(r: VmRecord): Promise<{ pub: string; fingerprint: string }>;
  /** swtpm, then QEMU; resolves once QEMU answers QMP, throws LaunchError otherwise. */
  start(r: VmRecord, o: StartOptions): Promise<Launched>;
  /** Whether the process with this pid is still this VM's (pids are reused). */
  alive(r: VmRecord, kind: 'qemu' | 'swtpm', pid: number | null): boolean;
  /** QMP powerdown (when powerdownMs > 0) → SIGTERM → SIGKILL; then swtpm and the metadata proxies. */
  stop(r: VmRecord, powerdownMs: number): Promise<StopHow>;
  /** After QEMU exited on its own: swtpm, proxies and pid files go too. */
  cleanup(r: VmRecord): Promise<void>;
  /**
   * Writes the running guest's memory and device state (QEMU's migration stream, with the vTPM's
   * volatile state) to a file; the guest is left paused. Absent: this launcher cannot.
   */
  saveMemory?(r: VmRecord, file: string): Promise<void>;
  /** A hardware reset of the guest. */
  reset(r: VmRecord): Promise<void>;
  /** Follows guest-initiated resets; null when this QEMU has no events monitor. */
  watchResets(r: VmRecord, onReset: () => void): Promise<(() => void) | null>;
  /** Adds a host loopback port → guest port forward to the running QEMU. */
  addForward(r: VmRecord, hostPort: number, guestPort: number): Promise<void>;
  /** A free port on the host's 127.0.0.1. */
  freePort(): Promise<number>;
}

export interface QemuLauncherOptions {
  accel: Accel;
  ovmf: { code: string; vars: string };
  metadataSocket: string;
  nodeBinary?: string;
  /** QEMU up and answering QMP */
  startMs: number;
  termMs: number;
  /**
   * The VMs' QEMU and swtpm die with this process (Linux: PR_SET_PDEATHSIG through setpriv). For
   * throw-away managers such as a learn boot; a serving manager's VMs outlive it on purpose.
   */
  dieWithParent?: boolean;
}

const eventsSocket = (r: VmRecord) => join(r.paths.dir, 'qmp-events.sock');

export class QemuLauncher implements Launcher {
  readonly accel: Accel;

  constructor(private readonly o: QemuLauncherOptions) {
    this.accel = o.accel;
  }

  prepare(r: VmRecord, baseDisk: string | null) {
    copyFileSync(this.o.ovmf.vars, r.paths.ovmfVars);
    if (r.paths.disk) {
      // an overlay of a disk image, or a blank disk beside a kernel boot
      const backing = baseDisk ? ['-F', 'qcow2', '-b', baseDisk] : [];
      execFileSync(findTool('qemu-img') ?? 'qemu-img', ['create', '-q', '-f', 'qcow2', ...backing, r.paths.disk, `${r.diskGiB}G`], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    }
  }

  async provisionAk(r: VmRecord) {
    const ak = await provisionVmAk(r.paths.tpmState);
    return { pub: ak.pub.toString('base64'), fingerprint: ak.fingerprint };
  }

  alive(r: VmRecord, kind: 'qemu' | 'swtpm', pid: number | null) {
    return aliveWith(pid, kind === 'qemu' ? r.paths.dir : r.paths.tpmState);
  }

  freePort() {
    return freeLoopbackPort();
  }

  async start(r: VmRecord, o: StartOptions): Promise<Launched> {
    // A learn boot's VM is the learn boot's alone (golden.ts learnWith deletes it at its end): it dies with this manager.
    const dieWithParent = this.o.dieWithParent || r.attestation.learn === true;
    // swtpm first: QEMU connects to its socket at start.
    rmSync(r.paths.swtpmSocket, { force: true });
    const swtpmLog = join(r.paths.dir, 'swtpm.log');
    let swtpm;
    try {
      swtpm = startDetached(
        findTool('swtpm') ?? 'swtpm',
        [
          'socket',
          '--tpm2',
          '--tpmstate',
          `dir=${r.paths.tpmState}`,
          '--ctrl',
          `type=unixio,path=${r.paths.swtpmSocket}`,
          '--log',
          'level=1',
        ],
        swtpmLog,
        { dieWithParent },
      );
    } catch (e) {
      throw new LaunchError(`swtpm did not start: ${e instanceof Error ? e.message : String(e)}`);
    }
    writePid(join(r.paths.dir, 'swtpm.pid'), swtpm.pid);
    o.onPid('swtpm', swtpm.pid);
    const sockEnd = Date.now() + 5000;
    while (!existsSync(r.paths.swtpmSocket) && Date.now() < sockEnd && aliveWith(swtpm.pid, r.paths.tpmState)) await sleep(20);
    if (!existsSync(r.paths.swtpmSocket))
      throw new LaunchError(`swtpm did not open its socket within 5 s: ${tailLines(swtpmLog, 5).join(' | ') || 'no output'}`);

    const internet = o.internet ? await this.startPasst(r) : null;
    const serialSocket = r.paths.serialSocket ?? join(r.paths.dir, 'serial.sock');
    rmSync(serialSocket, { force: true });
    // A fresh free port each start: the last one may have been taken meanwhile.
    const sshPort = await freeLoopbackPort();
    const node = this.o.nodeBinary ?? process.execPath;
    const guestForwards = r.hostForwards.map((f) => {
      const slots = join(r.paths.dir, `hostfwd-${f.guestPort}`);
      mkdirSync(slots, { recursive: true });
      return {
        address: GUEST_HOST_ALIAS,
        port: f.guestPort,
        cmd: hostForwardArgv(slots, [node, HOST_FORWARD_PROXY, r.id, String(f.hostPort)]),
      };
    });
    const spec: QemuSpec = {
      id: r.id,
      accel: r.accel,
      cpus: r.cpus,
      memoryMib: r.memoryMiB,
      ovmfCode: this.o.ovmf.code,
      ovmfVars: r.paths.ovmfVars,
      boot: o.boot,
      consoleFile: r.paths.console,
      serialSocket,
      qmpSocket: r.paths.qmpSocket,
      swtpmSocket: r.paths.swtpmSocket,
      metadataProxy: metadataForwardArgv(r.paths.dir, [node, METADATA_PROXY, this.o.metadataSocket, r.id]),
      guestForwards,
      sshHostPort: sshPort,
      forwards: r.forwards.map((f) => ({ hostPort: f.hostPort, guestPort: f.port })),
      network: o.network,
      lan: o.lan,
      internet,
      qmpEventsSocket: eventsSocket(r),
      incoming: o.incoming !== undefined,
    };
    writeFileSync(r.paths.console, ''); // QEMU appends (logappend=on, so capConsole can truncate it)
    rmSync(r.paths.qmpSocket, { force: true });
    rmSync(eventsSocket(r), { force: true });
    const qemuLog = join(r.paths.dir, 'qemu.log');
    let qemu;
    try {
      qemu = startDetached(findTool('qemu-system-x86_64') ?? 'qemu-system-x86_64', qemuArgv(spec), qemuLog, { dieWithParent });
    } catch (e) {
      throw new LaunchError(`qemu did not start: ${e instanceof Error ? e.message : String(e)}`);
    }
    writePid(join(r.paths.dir, 'qemu.pid'), qemu.pid);
    o.onPid('qemu', qemu.pid);
    let qmp: Qmp;
    try {
      qmp = await openQmpWhenReady(r.paths.qmpSocket, this.o.startMs, () => aliveWith(qemu.pid, r.paths.dir));
    } catch (e) {
      throw new LaunchError(`qemu did not come up: ${tailLines(qemuLog, 5).join(' | ') || (e instanceof Error ? e.message : String(e))}`);
    }
    try {
      if (o.incoming !== undefined) await resumeFrom(qmp, o.incoming);
    } catch (e) {
      throw new LaunchError(
        `qemu could not resume the saved memory: ${tailLines(qemuLog, 3).join(' | ') || (e instanceof Error ? e.message : String(e))}`,
      );
    } finally {
      qmp.close();
    }
    return { pids: { qemu: qemu.pid, swtpm: swtpm.pid }, sshPort, qemuExit: qemu.exited, swtpmExit: swtpm.exited };
  }

  /**
   * The VM's passt (Internet access): the guest is 10.0.2.15 behind 10.0.2.2 on its eth2, NATed
   * through this host's sockets; --no-map-gw keeps the gateway from reaching the host's loopback.
   */
  private async startPasst(r: VmRecord): Promise<{ sock: string }> {
    const bin = findTool('passt');
    if (!bin) throw new LaunchError('Internet access needs passt: install it with `apt-get install passt` (Linux only)');
    const sock = join(r.paths.dir, 'passt.sock');
    rmSync(sock, { force: true });
    const log = join(r.paths.dir, 'passt.log');
    // --runas: as the manager's own user (passt started by root would switch to nobody, whose socket QEMU never sees)
    const runas = typeof process.getuid === 'function' ? ['--runas', String(process.getuid())] : [];
    const p = startDetached(
      bin,
      ['-f', '-q', '-4', ...runas, '--no-map-gw', '-a', '10.0.2.15', '-n', '24', '-g', '10.0.2.2', '-s', sock],
      log,
      { dieWithParent: this.o.dieWithParent },
    );
    writePid(join(r.paths.dir, 'passt.pid'), p.pid);
    let exited = false;
    void p.exited.then(() => (exited = true));
    const end = Date.now() + 5000;
    while (!existsSync(sock) && Date.now() < end && !exited) await sleep(20);
    if (!existsSync(sock)) {
      const said = tailLines(log, 3).join(' | ');
      // passt NATs through the interface of the host's default route: with none (offline, or a sandbox) it exits at once.
      if (/no external routable interface/i.test(said)) {
        throw new LaunchError(
          `Internet access is on for network ${r.network}, but this machine has no route out (no default route), ` +
            'so passt cannot give the VM one: connect the machine to a network, ' +
            `or turn Internet access off for this POV and start the VM again (passt: ${said})`,
        );
      }
      throw new LaunchError(`passt did not open its socket within 5 s: ${said || 'no output'}`);
    }
    return { sock };
  }

  async stop(r: VmRecord, powerdownMs: number): Promise<StopHow> {
    let how: StopHow = 'gone';
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
      else how = (await terminate(qpid, r.paths.dir, this.o.termMs)) === 'kill' ? 'kill' : 'term';
    }
    await this.cleanup(r);
    return how;
  }

  async cleanup(r: VmRecord) {
    if (r.pids.swtpm) await terminate(r.pids.swtpm, r.paths.tpmState, 2000);
    // Metadata proxies QEMU started for this VM die with their connection; this catches a hung one.
    for (const pid of pidsMatching([METADATA_PROXY, this.o.metadataSocket, r.id])) signal(pid, 'SIGKILL');
    for (const pid of pidsMatching([HOST_FORWARD_PROXY, r.id])) signal(pid, 'SIGKILL');
    removePid(join(r.paths.dir, 'qemu.pid'));
    removePid(join(r.paths.dir, 'swtpm.pid'));
    const passt = readPid(join(r.paths.dir, 'passt.pid'));
    if (passt) await terminate(passt, join(r.paths.dir, 'passt.sock'), 2000);
    removePid(join(r.paths.dir, 'passt.pid'));
  }

  async saveMemory(r: VmRecord, file: string) {
    const q = await Qmp.open(r.paths.qmpSocket, 3000);
    try {
      // QEMU's default cap (32 MiB/s) is for a network; this is a local file
      await q.run('migrate-set-parameters', { 'max-bandwidth': 64 * 1024 ** 3 });
      await q.run('migrate', { uri: `exec:cat > ${shellWord(file)}` });
      await migrationDone(q, 'the memory snapshot');
    } finally {
      q.close();
    }
  }

  async reset(r: VmRecord) {
    const q = await Qmp.open(r.paths.qmpSocket, 3000);
    try {
      await q.run('system_reset');
    } finally {
      q.close();
    }
  }

  async watchResets(r: VmRecord, onReset: () => void) {
    if (!existsSync(eventsSocket(r))) return null; // a QEMU started before the events monitor
    return watchGuestResets(eventsSocket(r), onReset);
  }

  async addForward(r: VmRecord, hostPort: number, guestPort: number) {
    const q = await Qmp.open(r.paths.qmpSocket, 3000);
    try {
      const out = await q.run('human-monitor-command', { 'command-line': `hostfwd_add net0 tcp:127.0.0.1:${hostPort}-:${guestPort}` });
      if (typeof out === 'string' && out.trim()) throw new Error(out.trim());
    } finally {
      q.close();
    }
  }
}

const MIGRATION_MS = 300_000;

/** Polls query-migrate until it completed; throws on failure or after MIGRATION_MS. */
async function migrationDone(q: Qmp, what: string) {
  const end = Date.now() + MIGRATION_MS;
  for (;;) {
    const st = (await q.run('query-migrate')) as { status?: string; 'error-desc'?: string };
    if (st.status === 'completed') return;
    if (st.status === 'failed' || st.status === 'cancelled') throw new Error(`${what} failed: ${st['error-desc'] ?? st.status}`);
    if (Date.now() > end) {
      await q.run('migrate_cancel').catch(() => {});
      throw new Error(`${what} did not finish within ${MIGRATION_MS / 1000} s`);
    }
    await sleep(100);
  }
}

/** A QEMU started with `-incoming defer` loads the memory snapshot and runs on from it. */
async function resumeFrom(q: Qmp, file: string) {
  await q.run('migrate-incoming', { uri: `exec:cat ${shellWord(file)}` });
  const end = Date.now() + MIGRATION_MS;
  for (;;) {
    const st = (await q.run('query-status')) as { status?: string };
    if (st.status === 'running') return;
    if (st.status !== 'inmigrate' && st.status !== 'prelaunch') throw new Error(`QEMU is ${st.status} instead of resuming`);
    if (Date.now() > end) throw new Error(`the saved memory did not load within ${MIGRATION_MS / 1000} s`);
    await sleep(100);
  }
}
