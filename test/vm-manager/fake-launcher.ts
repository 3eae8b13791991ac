/**
 * A Launcher without QEMU or swtpm, for tests of the VM service and the REST API that need no real
 * boot: "processes" are entries in a map with exits the test can trigger, forwards are recorded,
 * and `onStart` lets a test play the guest (first contact, a verified quote, READY) through the
 * service's real bookkeeping. Everything else (records, supervision, timeouts, the API) is real.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createApiHandler } from '../../main/vm-manager/api';
import { hostReport } from '../../main/vm-manager/host';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { createMcpHandler, isMcpPath } from '../../main/vm-manager/mcp';
import { Networks } from '../../main/vm-manager/networks';
import { VmService } from '../../main/vm-manager/vms';
import {
  LaunchError,
  type Launched,
  type Launcher,
  type ProcessExit,
  type StartOptions,
  type StopHow,
} from '../../main/vm-manager/launcher';
import { freeLoopbackPort } from '../../main/lib/procs';
import type { VmRecord } from '../../main/vm-manager/vm-record';

interface FakeProc {
  vm: string;
  kind: 'qemu' | 'swtpm';
  alive: boolean;
  exit: (e: ProcessExit) => void;
}

export class FakeLauncher implements Launcher {
  readonly accel = 'tcg' as const;
  /** pids far above Linux's default pid_max, so no check can mistake one for a real process */
  private nextPid = 90_000_000;
  readonly procs = new Map<number, FakeProc>();
  readonly forwards: { vm: string; hostPort: number; guestPort: number }[] = [];
  readonly resets: string[] = [];
  /** set to make the next start fail at this step */
  failNextStart: string | null = null;
  /** called after a start, as the guest would begin talking to the metadata service */
  onStart: ((r: VmRecord) => void) | null = null;

  prepare(r: VmRecord) {
    writeFileSync(r.paths.ovmfVars, '');
  }

  async provisionAk(r: VmRecord) {
    return { pub: Buffer.from(`fake-ak-${r.id}`).toString('base64'), fingerprint: `sha256:fake-${r.id}` };
  }

  private spawn(vm: string, kind: 'qemu' | 'swtpm'): { pid: number; exited: Promise<ProcessExit> } {
    const pid = this.nextPid++;
    let exit!: (e: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((r) => (exit = r));
    this.procs.set(pid, { vm, kind, alive: true, exit });
    return { pid, exited };
  }

  async start(r: VmRecord, o: StartOptions): Promise<Launched> {
    if (this.failNextStart) {
      const why = this.failNextStart;
      this.failNextStart = null;
      throw new LaunchError(why);
    }
    const swtpm = this.spawn(r.id, 'swtpm');
    o.onPid('swtpm', swtpm.pid);
    const qemu = this.spawn(r.id, 'qemu');
    o.onPid('qemu', qemu.pid);
    writeFileSync(r.paths.console, `fake boot of ${r.id} (${o.boot.kind}, network ${o.network})\n`);
    setImmediate(() => this.onStart?.(r));
    return {
      pids: { qemu: qemu.pid, swtpm: swtpm.pid },
      sshPort: await freeLoopbackPort(),
      qemuExit: qemu.exited,
      swtpmExit: swtpm.exited,
    };
  }

  alive(_r: VmRecord, _kind: 'qemu' | 'swtpm', pid: number | null) {
    return pid !== null && this.procs.get(pid)?.alive === true;
  }

  /** Ends a fake process as a crash (SIGKILL) or a clean exit. */
  end(pid: number | null, how: ProcessExit = { code: null, signal: 'SIGKILL' }) {
    const p = pid === null ? undefined : this.procs.get(pid);
    if (!p?.alive) return;
    p.alive = false;
    p.exit(how);
  }

  async stop(r: VmRecord, powerdownMs: number): Promise<StopHow> {
    const alive = this.alive(r, 'qemu', r.pids.qemu);
    this.end(r.pids.qemu, powerdownMs > 0 ? { code: 0, signal: null } : { code: null, signal: 'SIGTERM' });
    await this.cleanup(r);
    return !alive ? 'gone' : powerdownMs > 0 ? 'powerdown' : 'term';
  }

  async cleanup(r: VmRecord) {
    this.end(r.pids.swtpm, { code: 0, signal: null });
  }

  async reset(r: VmRecord) {
    if (!this.alive(r, 'qemu', r.pids.qemu)) throw new Error('no QEMU');
    this.resets.push(r.id);
    setImmediate(() => this.onStart?.(r));
  }

  async watchResets() {
    return null;
  }

  async addForward(r: VmRecord, hostPort: number, guestPort: number) {
    this.forwards.push({ vm: r.id, hostPort, guestPort });
  }

  freePort() {
    return freeLoopbackPort();
  }
}

/** Plays a guest that attests and reports READY, through the service's own bookkeeping. */
export function attestingGuest(vms: {
  guestContact(id: string): void;
  nonceIssued(id: string): void;
  recordQuote(id: string, r: never, s: 'initrd' | 'ready'): void;
  guestReady(id: string): boolean;
}) {
  return (r: VmRecord) => {
    vms.guestContact(r.id);
    vms.nonceIssued(r.id);
    const at = new Date().toISOString();
    vms.recordQuote(
      r.id,
      { verified: true, message: 'fake quote verified', at, failed: null, pcrs: {}, mismatches: [], learned: {} } as never,
      'initrd',
    );
    vms.guestReady(r.id);
  };
}

export interface FakeDaemon {
  url: string;
  vms: VmService;
  launcher: FakeLauncher;
  close(): Promise<void>;
}

/** A test-image record (no files behind it) in a state dir: what the fake launcher's VMs are made from. */
export function writeStubTestImage(state: string): void {
  const img = join(state, 'images', TEST_IMAGE);
  mkdirSync(img, { recursive: true });
  writeFileSync(
    join(img, 'image.json'),
    JSON.stringify({
      name: TEST_IMAGE,
      kind: 'kernel',
      createdAt: new Date().toISOString(),
      kernel: 'vmlinuz',
      initrd: 'initrd.img',
      cmdline: 'console=ttyS0',
      sizeBytes: 1,
      sha256: '0'.repeat(64),
    }),
  );
}

/**
 * The daemon's real REST handler (and its /mcp, as serve() mounts it) over a state dir holding a
 * test-image record, on 127.0.0.1, with this launcher and an attesting guest: what a suite that
 * needs the API but no boot listens to.
 */
export async function startFakeDaemon(state: string, token: string): Promise<FakeDaemon> {
  writeStubTestImage(state);
  const launcher = new FakeLauncher();
  const networks = new Networks(state);
  const vms = new VmService({
    stateDir: state,
    launcher,
    networkMode: (n) => networks.get(n).mode,
    timeouts: { startMs: 1000, bootMs: 1500, powerdownMs: 200, termMs: 200 },
  });
  launcher.onStart = attestingGuest(vms);
  const handler = () => createApiHandler({ stateDir: state, token, vms, networks, host: () => hostReport() });
  const rest = handler();
  const mcp = createMcpHandler({ token, rest: handler() });
  const server: Server = createServer((req, res) => (isMcpPath(req.url) ? mcp(req, res) : rest(req, res)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    vms,
    launcher,
    async close() {
      vms.detach();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
