/**
 * One user-mode Ethernet switch per network (Debian's vde2 `vde_switch`), with the network's
 * gateway port (net-gateway.ts) plugged in. QEMU joins a VM's second NIC to it with `-netdev vde`.
 * No root, no tap, no bridge: the switch is a unix socket directory under the state dir, 0700 with
 * a 0600 control socket, so another local user cannot plug anything in.
 *
 * The switch runs while any VM of the network may use it (creating, live or stopping) and goes
 * when the last one stops or is deleted. Like QEMU and swtpm it is started detached, so the VMs'
 * network outlives a manager restart; the gateway port lives in the manager (`vde_plug`, a child
 * that ends with it): while no manager runs, guests keep their addresses (leases never expire)
 * and reach each other, and only new DHCP or DNS questions wait for the next manager.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { aliveWith, readPid, removePid, startDetached, terminate, writePid } from '../lib/procs';
import { sleep } from '../lib/sleep';
import { VmmError } from './errors';
import { findTool } from './finders';
import { tailLines } from './console';
import { NetworkGateway, type GatewayLease } from './net-gateway';
import type { NetworkEntry } from './networks';

export interface LanSwitchesOptions {
  stateDir: string;
  /** the leases of a network's VMs, read at every DHCP or DNS question */
  leases: (network: string) => GatewayLease[];
  /** the network's entry now (internet access may change while it runs) */
  entry: (network: string) => NetworkEntry | null;
  dieWithParent?: boolean;
  log?: (msg: string) => void;
}

export class LanSwitches {
  private readonly gateways = new Map<string, NetworkGateway>();
  private readonly starting = new Map<string, Promise<string>>();
  private readonly stopping = new Map<string, Promise<void>>();

  constructor(private readonly o: LanSwitchesOptions) {}

  dir(network: string): string {
    return join(this.o.stateDir, 'networks', network);
  }

  /** The switch's control directory: what `-netdev vde,sock=` names. */
  sock(network: string): string {
    return join(this.dir(network), 'switch');
  }

  private pidFile(network: string) {
    return join(this.dir(network), 'switch.pid');
  }

  running(network: string): boolean {
    return aliveWith(readPid(this.pidFile(network)), this.sock(network)) && existsSync(join(this.sock(network), 'ctl'));
  }

  /** The switch up with its gateway plugged in; resolves to the socket directory. */
  up(n: NetworkEntry): Promise<string> {
    const had = this.starting.get(n.name);
    if (had) return had;
    const p = this.upNow(n).finally(() => this.starting.delete(n.name));
    this.starting.set(n.name, p);
    return p;
  }

  /** Whether up() is under way (the manager must not take the switch down meanwhile). */
  busy(network: string): boolean {
    return this.starting.has(network);
  }

  private async upNow(n: NetworkEntry): Promise<string> {
    await this.stopping.get(n.name);
    const sock = this.sock(n.name);
    if (!this.running(n.name)) {
      const bin = findTool('vde_switch');
      if (!bin)
        throw new VmmError(
          'unavailable',
          'vde_switch is missing, so VMs cannot share a network: install it with `apt-get install vde2` (macOS: `brew install vde`)',
        );
      const dir = this.dir(n.name);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      rmSync(sock, { recursive: true, force: true });
      // vde_switch in the foreground reads commands on stdin and exits at its end: a FIFO it holds
      // open for reading and writing never ends, and keeps the pid ours (no daemonising fork).
      const console = join(dir, 'console.fifo');
      rmSync(console, { force: true });
      execFileSync('mkfifo', ['-m', '600', console]);
      const started = startDetached(
        '/bin/sh',
        ['-c', 'exec "$0" -s "$1" -m 0600 --dirmode 0700 -n 128 <>"$2"', bin, sock, console],
        join(dir, 'switch.log'),
        { dieWithParent: this.o.dieWithParent },
      );
      writePid(this.pidFile(n.name), started.pid);
      // Its exit, not /proc: while sh execs vde_switch its command line can read empty for a moment.
      let exited = false;
      void started.exited.then(() => (exited = true));
      const end = Date.now() + 10_000;
      while (!existsSync(join(sock, 'ctl')) && Date.now() < end && !exited) await sleep(20);
      if (!existsSync(join(sock, 'ctl'))) {
        throw new VmmError(
          'internal',
          `the switch of network "${n.name}" did not start (${exited ? 'it exited' : 'no socket within 10 s'}): ` +
            (tailLines(join(dir, 'switch.log'), 3).join(' | ') || 'no output'),
        );
      }
      this.o.log?.(`network ${n.name}: switch up (pid ${started.pid})`);
    }
    if (!this.gateways.has(n.name)) {
      const plug = findTool('vde_plug');
      if (!plug)
        throw new VmmError(
          'unavailable',
          'vde_plug is missing, so a network cannot hand out addresses: ' +
            'install it with `apt-get install vdeplug` (macOS: `brew install vde`)',
        );
      const gw = new NetworkGateway({
        name: n.name,
        cidr: n.cidr,
        gateway: n.gatewayIP,
        dnsSearchDomain: n.dnsSearchDomain,
        internet: () => this.o.entry(n.name)?.internet ?? false,
        leases: () => this.o.leases(n.name),
        log: this.o.log,
      });
      gw.start(plug, sock);
      this.gateways.set(n.name, gw);
    }
    return sock;
  }

  /** The gateway port out and the switch stopped; its directory removed. */
  down(network: string): Promise<void> {
    const had = this.stopping.get(network);
    if (had) return had;
    const p = this.downNow(network).finally(() => this.stopping.delete(network));
    this.stopping.set(network, p);
    return p;
  }

  private async downNow(network: string): Promise<void> {
    this.gateways.get(network)?.stop();
    this.gateways.delete(network);
    const pid = readPid(this.pidFile(network));
    if (pid) await terminate(pid, this.sock(network), 2000);
    removePid(this.pidFile(network));
    rmSync(this.dir(network), { recursive: true, force: true });
    this.o.log?.(`network ${network}: switch down`);
  }

  /** Unplugs every gateway port (the manager closes; switches with VMs on them keep running). */
  async detach(): Promise<void> {
    for (const g of this.gateways.values()) g.stop();
    this.gateways.clear();
    // A switch being taken down (its last VM stopped) finishes first: otherwise its directory is
    // removed after the next manager on this state dir has started a new switch in it.
    await Promise.allSettled([...this.stopping.values()]);
  }
}
