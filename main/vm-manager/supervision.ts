/**
 * Supervision of running VMs: each VM's runtime state (stopping, the boot timer, the /proc poll,
 * the QMP event watch), what happens when QEMU or swtpm exits, and the boot timeout that turns a
 * VM without READY into `running` with lastError saying why.
 */
import { tailLines } from './console';
import { capConsole, CONSOLE_MAX_BYTES } from './guest-limits';
import { signal } from '../lib/procs';
import { now, type VmRecord, type VmRecords } from './vm-record';
import type { Launcher, ProcessExit } from './launcher';

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

export interface Runtime {
  stopping: boolean;
  failReason: string | null;
  bootTimer: NodeJS.Timeout | null;
  poll: NodeJS.Timeout | null;
  generation: number;
  /** stops the QMP event watch (guest resets) */
  unwatch: (() => void) | null;
}

/** The message with the console's last lines appended (what the guest said before it went wrong). */
export function errorWithTail(r: VmRecord, message: string, lines = 40): string {
  const tail = tailLines(r.paths.console, lines);
  return tail.length ? `${message}\n--- last ${tail.length} console lines ---\n${tail.join('\n')}` : `${message} (the console is empty)`;
}

const SWTPM_GONE = "swtpm (the VM's TPM) exited unexpectedly, so the VM was stopped";

export class Supervisor {
  private rt = new Map<string, Runtime>();

  constructor(
    private readonly recs: VmRecords,
    private readonly launcher: Launcher,
    private readonly o: { timeouts: Timeouts; consoleMaxBytes?: number; log: (msg: string) => void },
  ) {}

  runtime(id: string): Runtime {
    let r = this.rt.get(id);
    if (!r) {
      r = { stopping: false, failReason: null, bootTimer: null, poll: null, generation: 0, unwatch: null };
      this.rt.set(id, r);
    }
    return r;
  }

  forget(id: string) {
    const rt = this.rt.get(id);
    if (rt?.poll) clearInterval(rt.poll);
    if (rt?.bootTimer) clearTimeout(rt.bootTimer);
    rt?.unwatch?.();
    this.rt.delete(id);
  }

  clearBootTimer(id: string) {
    const rt = this.runtime(id);
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    rt.bootTimer = null;
  }

  /**
   * Watches both processes. Our own children report their exit; reattached ones are polled
   * through /proc. Either exit ends the VM: swtpm is stopped whenever QEMU exits, and QEMU is
   * stopped when its TPM disappears.
   */
  supervise(id: string, qemuExit: Promise<ProcessExit> | null, swtpmExit: Promise<unknown> | null) {
    const r = this.recs.get(id);
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
      this.qemuGone(id, how, clean).catch((e) => this.o.log(`vm ${id}: cleanup after qemu exit failed: ${e}`));
    };
    const swtpmGone = () => {
      rt.failReason = SWTPM_GONE;
      if (qpid) signal(qpid, 'SIGTERM');
    };
    if (qemuExit) {
      qemuExit.then(({ code, signal: sig }) =>
        onQemuGone(sig ? `qemu was killed by ${sig}` : `qemu exited with code ${code}`, code === 0 && !sig),
      );
    }
    if (swtpmExit) {
      swtpmExit.then(() => {
        if (done || gen !== rt.generation || rt.stopping) return;
        swtpmGone();
      });
    }
    let ticks = 0;
    const consoleMax = this.o.consoleMaxBytes ?? CONSOLE_MAX_BYTES;
    rt.poll = setInterval(() => {
      if (done || gen !== rt.generation) return;
      if (++ticks % 3 === 0 && capConsole(r.paths.console, consoleMax))
        this.o.log(`vm ${id}: console.log over ${consoleMax} bytes, older half dropped`);
      if (!qemuExit && qpid && !this.launcher.alive(r, 'qemu', qpid))
        onQemuGone('qemu exited while vm-manager was not its parent (exit status unknown)', false);
      if (!swtpmExit && spid && !rt.stopping && !rt.failReason && !this.launcher.alive(r, 'swtpm', spid)) swtpmGone();
    }, 300);
    rt.poll.unref();
  }

  private async qemuGone(id: string, how: string, clean: boolean) {
    const r = this.recs.find(id);
    if (!r) return;
    const rt = this.runtime(id);
    this.clearBootTimer(id);
    rt.unwatch?.();
    rt.unwatch = null;
    await this.launcher.cleanup(r);
    if (rt.stopping || r.state === 'deleting') return; // stop()/delete() set the final state
    this.recs.update(id, (v) => {
      v.pids = { qemu: null, swtpm: null };
      v.ports = { ssh: null };
      v.stoppedAt = now();
      if (rt.failReason) {
        v.state = 'failed';
        v.lastError = errorWithTail(v, rt.failReason);
      } else if (clean) {
        v.state = 'stopped';
        v.lastError = null;
      } else {
        v.state = 'failed';
        v.lastError = errorWithTail(v, `${how}${v.readyAt ? '' : ` before READY (state was ${v.state})`}`);
      }
    });
  }

  armBootTimer(id: string, ms: number) {
    const rt = this.runtime(id);
    if (rt.bootTimer) clearTimeout(rt.bootTimer);
    rt.bootTimer = setTimeout(
      () => {
        rt.bootTimer = null;
        const r = this.recs.find(id);
        if (!r || (r.state !== 'booting' && r.state !== 'attesting')) return;
        const why =
          r.requireAttestation && !r.attestation.userDataReleased
            ? `no READY within ${Math.round(ms / 1000)} s: attestation did not verify, ` +
              `so user-data was withheld (${r.attestation.initrd?.message ?? 'no initrd quote arrived'})`
            : `no READY within ${Math.round(ms / 1000)} s; the VM keeps running and a late READY still makes it ready`;
        this.recs.update(id, (v) => {
          v.state = 'running';
          v.lastError = errorWithTail(v, why);
        });
      },
      Math.max(0, ms),
    );
    rt.bootTimer.unref();
  }

  /** Follows QEMU's events: a reset the guest made starts a new boot whose user-data is withheld again. */
  async watchResets(id: string, onReset: () => void) {
    const rt = this.runtime(id);
    rt.unwatch?.();
    rt.unwatch = null;
    try {
      rt.unwatch = await this.launcher.watchResets(this.recs.get(id), onReset);
    } catch (e) {
      this.o.log(
        `vm ${id}: no QMP event watch, so a reboot from inside the guest is not re-gated: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
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
}
