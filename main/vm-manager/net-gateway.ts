/**
 * A network's gateway port: plugged into the network's switch with `vde_plug` (frames on its
 * stdin/stdout, each behind a 2-byte big-endian length), it answers ARP for the gateway address,
 * DHCP from the leases the manager holds (a VM's address is fixed in its record before QEMU
 * starts; the guest learns it here), and DNS for the VMs' names at the gateway address. Unknown
 * names are forwarded to the host's resolver only when the network has Internet access. It routes
 * nothing: guests on one switch reach each other directly, and nothing reaches the host through it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import {
  arpReply,
  BROADCAST_MAC,
  DHCP,
  dhcpReply,
  DNS_A,
  dnsAnswer,
  eth,
  ETH_ARP,
  ETH_IP,
  ipNum,
  macBytes,
  macText,
  parseArpRequest,
  parseDhcp,
  parseDnsQuery,
  parseEth,
  parseUdp,
  RCODE,
  udp,
  type DnsQuery,
} from './net-packets';

export interface GatewayLease {
  mac: string;
  ip: string;
  /** the names DNS answers with ip: the VM's name and hostname */
  names: string[];
}

export interface GatewayConfig {
  name: string;
  cidr: string;
  gateway: string;
  dnsSearchDomain: string | null;
  /** forward names the network does not know to the host's resolver */
  internet: () => boolean;
  leases: () => GatewayLease[];
  log?: (msg: string) => void;
}

/** The gateway's own MAC on every network (outside 52:54:…, where the VMs' are). */
export const GATEWAY_MAC = '52:55:0a:00:00:01';
/** Leases never expire: a VM's address is its record's for its whole life. */
const LEASE_SECONDS = 0xffffffff;

function maskOf(cidr: string): number {
  const bits = Number(cidr.split('/')[1]);
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

function hostResolver(): string | null {
  try {
    const m = /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'));
    return m?.[1] ?? null;
  } catch {
    return null;
  }
}

export class NetworkGateway {
  private plug: ChildProcess | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private readonly mac = macBytes(GATEWAY_MAC);
  private readonly ip: number;
  private readonly mask: number;
  private stopped = false;

  constructor(private readonly c: GatewayConfig) {
    this.ip = ipNum(c.gateway);
    this.mask = maskOf(c.cidr);
  }

  /** Plugs into the switch whose control directory is `sock`; re-plugs if vde_plug exits. */
  start(plugBinary: string, sock: string) {
    this.stopped = false;
    const p = spawn(plugBinary, [`vde://${sock}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.plug = p;
    let err = '';
    p.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-500)));
    p.stdout?.on('data', (d: Buffer) => this.onData(d));
    p.stdin?.on('error', () => {});
    p.on('error', (e) => this.c.log?.(`network ${this.c.name}: vde_plug did not start: ${e.message}`));
    p.on('exit', (code) => {
      if (this.plug === p) this.plug = null;
      if (this.stopped) return;
      this.c.log?.(`network ${this.c.name}: the gateway's vde_plug exited (${code}): ${err.trim()}; plugging in again in 1 s`);
      setTimeout(() => !this.stopped && this.start(plugBinary, sock), 1000).unref();
    });
  }

  stop() {
    this.stopped = true;
    this.plug?.kill('SIGTERM');
    this.plug = null;
  }

  private onData(d: Buffer) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    while (this.buf.length >= 2) {
      const len = this.buf.readUInt16BE(0);
      if (this.buf.length < 2 + len) break;
      const frame = this.buf.subarray(2, 2 + len);
      this.buf = this.buf.subarray(2 + len);
      try {
        this.onFrame(frame);
      } catch (e) {
        this.c.log?.(`network ${this.c.name}: dropped a frame: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  private send(frame: Buffer) {
    const h = Buffer.alloc(2);
    h.writeUInt16BE(frame.length);
    this.plug?.stdin?.write(Buffer.concat([h, frame]));
  }

  private onFrame(f: Buffer) {
    const e = parseEth(f);
    if (!e) return;
    if (e.type === ETH_ARP) {
      const a = parseArpRequest(e.payload);
      if (a && a.targetIp === this.ip) this.send(eth(a.senderMac, this.mac, ETH_ARP, arpReply(this.mac, this.ip, a.senderMac, a.senderIp)));
      return;
    }
    if (e.type !== ETH_IP) return;
    const u = parseUdp(e.payload);
    if (!u) return;
    if (u.dport === 67) this.dhcp(u.data);
    else if (u.dport === 53 && u.dst === this.ip) void this.dns(e.src, u.src, u.sport, u.data);
  }

  private leaseOf(mac: string): GatewayLease | undefined {
    return this.c.leases().find((l) => l.mac === mac);
  }

  private dhcp(data: Buffer) {
    const req = parseDhcp(data);
    if (!req) return;
    const lease = this.leaseOf(macText(req.chaddr));
    // A MAC without a lease is nothing this manager started: no answer.
    if (!lease || (req.type !== DHCP.DISCOVER && req.type !== DHCP.REQUEST && req.type !== DHCP.INFORM)) return;
    const ip = ipNum(lease.ip);
    const type = req.type === DHCP.DISCOVER ? DHCP.OFFER : req.requested !== null && req.requested !== ip ? DHCP.NAK : DHCP.ACK;
    const body = dhcpReply(req, {
      type,
      yiaddr: type === DHCP.NAK ? 0 : ip,
      server: this.ip,
      mask: this.mask,
      leaseSeconds: LEASE_SECONDS,
      dns: this.ip,
      router: null,
      hostname: lease.names[0] ?? null,
      domain: this.c.dnsSearchDomain,
    });
    this.send(eth(BROADCAST_MAC, this.mac, ETH_IP, udp(this.ip, 0xffffffff, 67, 68, body)));
  }

  /** The lease whose name (or name.<search domain>) is asked for. */
  private lookup(name: string): GatewayLease | undefined {
    const suffix = this.c.dnsSearchDomain ? `.${this.c.dnsSearchDomain.toLowerCase()}` : null;
    const bare = suffix && name.endsWith(suffix) ? name.slice(0, -suffix.length) : name;
    return this.c.leases().find((l) => l.names.some((n) => n.toLowerCase() === bare));
  }

  private async dns(toMac: Buffer, toIp: number, toPort: number, data: Buffer) {
    const q = parseDnsQuery(data);
    if (!q) return;
    const reply = (payload: Buffer) => this.send(eth(Buffer.from(toMac), this.mac, ETH_IP, udp(this.ip, toIp, 53, toPort, payload)));
    const lease = this.lookup(q.name);
    if (lease) return reply(dnsAnswer(q, q.qtype === DNS_A && q.qclass === 1 ? ipNum(lease.ip) : null, RCODE.OK));
    if (!this.c.internet()) return reply(dnsAnswer(q, null, RCODE.NXDOMAIN));
    const upstream = await this.forward(q, data);
    reply(upstream ?? dnsAnswer(q, null, RCODE.REFUSED));
  }

  /** The host resolver's answer (Internet access only), or null after 3 s. */
  private forward(q: DnsQuery, data: Buffer): Promise<Buffer | null> {
    const server = hostResolver();
    if (!server) return Promise.resolve(null);
    return new Promise((resolve) => {
      const s = createSocket('udp4');
      const done = (v: Buffer | null) => {
        clearTimeout(t);
        s.close();
        resolve(v);
      };
      const t = setTimeout(() => done(null), 3000);
      s.on('error', () => done(null));
      s.on('message', (m) => m.length >= 2 && m.readUInt16BE(0) === q.id && done(m));
      s.send(data, 53, server);
    });
  }
}
