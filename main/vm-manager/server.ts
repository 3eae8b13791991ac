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
import { leaseFor, Networks } from './networks';
import { LanSwitches } from './net-switch';
import { LIVE } from './vm-record';
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
  /** HTTP requests being answered now. */
  requests(): number;
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
      throw new VmmError(
        'conflict',
        `another vm-manager (pid ${pid}) serves ${stateDir}; stop it first, or remove ${file} if that pid is not a vm-manager`,
      );
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
    throw new VmmError(
      'unavailable',
      `this host cannot run VMs: ${host.missing.map((m) => `${m.what} (${m.install})`).join('; ') || host.accelerator.reason}`,
    );
  }
  if (host.accelerator.warning) o.log?.(`warning: ${host.accelerator.warning}`);
  const token = o.token ?? randomBytes(24).toString('hex');
  const timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const launcher = new QemuLauncher({
    accel,
    ovmf,
    metadataSocket: join(stateDir, 'metadata.sock'),
    nodeBinary: o.nodeBinary,
    startMs: timeouts.startMs,
    termMs: timeouts.termMs,
    dieWithParent: o.dieWithParent,
  });
  const networks = new Networks(stateDir);
  const switches = new LanSwitches({
    stateDir,
    dieWithParent: o.dieWithParent,
    log: o.log,
    entry: (name) => (networks.has(name) ? networks.get(name) : null),
    leases: (name) =>
      vms
        .list()
        .filter((v) => v.network === name && v.lease)
        .map((v) => ({ mac: v.lease!.mac, ip: v.lease!.ip, names: [...new Set([v.hostname ?? v.name, v.name])] })),
  });
  const vms: VmService = new VmService({
    stateDir,
    launcher,
    networkMode: (n) => networks.get(n).mode,
    timeouts,
    consoleMaxBytes: o.consoleMaxBytes,
    log: o.log,
    lan: {
      leaseFor: (n, id, taken) => leaseFor(networks.get(n), id, taken),
      up: (n) => switches.up(networks.get(n)),
      internet: (n) => networks.get(n).internet,
    },
  });
  // A network's switch runs while a VM of it may use it: creating, live or stopping.
  const usesSwitch = (state: string) => state === 'creating' || state === 'stopping' || (LIVE as string[]).includes(state);
  const idle = () => {
    for (const n of networks.list()) {
      if (!switches.busy(n.name) && switches.running(n.name) && !vms.list().some((v) => v.network === n.name && usesSwitch(v.state)))
        void switches.down(n.name).catch(() => {});
    }
  };
  vms.events.on('change', idle);
  vms.events.on('deleted', idle);
  const metadata = new MetadataService({ socketPath: join(stateDir, 'metadata.sock'), vms, stateDir, learn: o.learn, log: o.log });
  // The metadata socket first: reattached guests may be asking already.
  await metadata.listen();
  const recovered = await vms.recover();
  // Reattached VMs get their networks' gateways back (their switches kept running).
  for (const name of new Set(
    vms
      .list()
      .filter((v) => (LIVE as string[]).includes(v.state) && v.lease && networks.has(v.network))
      .map((v) => v.network),
  )) {
    await switches.up(networks.get(name)).catch((e: unknown) => o.log?.(`network ${name}: ${e instanceof Error ? e.message : String(e)}`));
  }
  idle();
  // DNS rebinding: over TCP only the exact address:port we listen on is a valid Host (unix sockets have no Host to check).
  let allowedHost: string | null = null;
  const handler = createApiHandler({ stateDir, token, vms, networks, host: () => hostReport(), allowedHost: () => allowedHost });
  // /mcp answers through the REST routes in-process (no Host header there), behind the same Host
  // check and an Origin check (main/lib/loopback-guard.ts).
  const mcp = createMcpHandler({ token, rest: createApiHandler({ stateDir, token, vms, networks, host: () => hostReport() }) });
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    res.once('close', () => requests--);
    if (!isMcpPath(req.url)) return handler(req, res);
    const wrongHost = allowedHost === null ? null : foreignRequest(req, allowedHost);
    if (wrongHost)
      return void res
        .writeHead(403, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'forbidden', message: wrongHost } }));
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
    url,
    socket: o.socket ?? null,
    token,
    stateDir,
    vms,
    metadata,
    host,
    recovered,
    requests: () => requests,
    async close(opts = {}) {
      releaseLock(stateDir);
      if (opts.stopVms) await vms.stopAll();
      vms.detach();
      vms.events.off('change', idle);
      vms.events.off('deleted', idle);
      await switches.detach();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await metadata.close();
    },
  };
}
