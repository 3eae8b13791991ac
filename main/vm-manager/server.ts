/** Assembles the daemon: host report, VM service (with recovery), metadata socket, REST server. */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { createApiHandler } from './api';
import { createMcpHandler, isMcpPath } from './mcp';
import { VmmError } from './errors';
import { findOvmf, hostReport, type HostReport } from './host';
import { MetadataService } from './metadata';
import { DEFAULT_TIMEOUTS, VmService, type Timeouts } from './vms';
import { QemuLauncher } from './launcher';
import { Networks } from './networks';
import { procCmdline, procStart, readPid, readPidStart, writePid } from '../lib/procs';
import { foreignRequest } from '../lib/loopback-guard';
import type { Accel } from './argv';

export interface ServeOptions {
  stateDir: string;
  /** TCP port on 127.0.0.1 (0 = random); ignored when socket is set */
  port?: number;
  host?: string;
  socket?: string;
  token?: string;
  /** images in learn mode (serve --learn-golden <image>): their VMs' PCRs without golden values are accepted */
  learn?: string[];
  /** console.log cap per running VM (bytes) */
  consoleMaxBytes?: number;
  timeouts?: Partial<Timeouts>;
  nodeBinary?: string;
  /** skip the probe and use this accelerator (tests that already probed) */
  accel?: Accel;
  log?: (msg: string) => void;
  /** The VMs die with this process (a learn boot's private manager); see QemuLauncherOptions. */
  dieWithParent?: boolean;
}

export interface RunningManager {
  url: string;
  socket: string | null;
  token: string;
  stateDir: string;
  vms: VmService;
  metadata: MetadataService;
  host: HostReport;
  recovered: { reattached: string[]; cleaned: string[] };
  /** Closes the servers; VMs keep running unless stopVms. */
  close(opts?: { stopVms?: boolean }): Promise<void>;
}

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.POVDESK_HOME;
  if (!home) throw new VmmError('invalid_request', 'POVDESK_HOME is not set: pass --state-dir or set POVDESK_HOME');
  return join(home, 'vm-manager');
}

/**
 * One manager per state dir: two would both supervise (and stop) the same VMs. The lock is a pid
 * file; a dead or reused pid (not a node/electron process) does not hold it.
 */
function takeLock(stateDir: string) {
  const file = join(stateDir, 'manager.pid');
  const pid = readPid(file);
  if (pid && pid !== process.pid) {
    const argv = procCmdline(pid);
    const start = readPidStart(file);
    if (argv && argv.some((a) => /node|electron|povdesk|tsx|vm-manager/.test(a)) && (start === null || procStart(pid) === start)) {
      throw new VmmError('conflict', `another vm-manager (pid ${pid}) serves ${stateDir}; stop it first, or remove ${file} if that pid is not a vm-manager`);
    }
  }
  writePid(file, process.pid);
}

function releaseLock(stateDir: string) {
  const file = join(stateDir, 'manager.pid');
  if (readPid(file) === process.pid) rmSync(file, { force: true });
}

export async function serve(o: ServeOptions): Promise<RunningManager> {
  const stateDir = resolve(o.stateDir);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  takeLock(stateDir);
  const host = await hostReport();
  const ovmf = findOvmf();
  const accel = o.accel ?? host.accelerator.chosen;
  if (!ovmf || !accel || !host.qemu.found || !host.swtpm.found) {
    throw new VmmError('unavailable', `this host cannot run VMs: ${host.missing.map((m) => `${m.what} (${m.install})`).join('; ') || host.accelerator.reason}`);
  }
  if (host.accelerator.warning) o.log?.(`warning: ${host.accelerator.warning}`);
  const token = o.token ?? randomBytes(24).toString('hex');
  const timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const launcher = new QemuLauncher({ accel, ovmf, metadataSocket: join(stateDir, 'metadata.sock'), nodeBinary: o.nodeBinary, startMs: timeouts.startMs, termMs: timeouts.termMs, dieWithParent: o.dieWithParent });
  const networks = new Networks(stateDir);
  const vms = new VmService({ stateDir, launcher, networkMode: (n) => networks.get(n).mode, timeouts, consoleMaxBytes: o.consoleMaxBytes, log: o.log });
  const metadata = new MetadataService({ socketPath: join(stateDir, 'metadata.sock'), vms, stateDir, learn: o.learn, log: o.log });
  // The metadata socket first: reattached guests may be asking already.
  await metadata.listen();
  const recovered = await vms.recover();
  // DNS rebinding: over TCP only the exact address:port we listen on is a valid Host (unix sockets have no Host to check).
  let allowedHost: string | null = null;
  const handler = createApiHandler({ stateDir, token, vms, networks, host: () => hostReport(), allowedHost: () => allowedHost });
  // /mcp answers through the REST routes in-process (no Host header there), behind the same Host
  // check and an Origin check (main/lib/loopback-guard.ts).
  const mcp = createMcpHandler({ token, rest: createApiHandler({ stateDir, token, vms, networks, host: () => hostReport() }) });
  const server: Server = createServer((req, res) => {
    if (!isMcpPath(req.url)) return handler(req, res);
    const wrongHost = allowedHost === null ? null : foreignRequest(req, allowedHost);
    if (wrongHost) return void res.writeHead(403, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { code: 'forbidden', message: wrongHost } }));
    mcp(req, res);
  });
  server.requestTimeout = 0; // create with wait_for may take minutes
  let url: string;
  if (o.socket) {
    rmSync(o.socket, { force: true });
    await new Promise<void>((r, j) => server.once('error', j).listen(o.socket, () => r()));
    chmodSync(o.socket, 0o600);
    url = `unix:${o.socket}`;
  } else {
    await new Promise<void>((r, j) => server.once('error', j).listen(o.port ?? 0, o.host ?? '127.0.0.1', () => r()));
    const a = server.address() as AddressInfo;
    url = `http://${a.address}:${a.port}`;
    allowedHost = `${a.address}:${a.port}`;
  }
  return {
    url, socket: o.socket ?? null, token, stateDir, vms, metadata, host, recovered,
    async close(opts = {}) {
      releaseLock(stateDir);
      if (opts.stopVms) await vms.stopAll();
      vms.detach();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await metadata.close();
    },
  };
}
