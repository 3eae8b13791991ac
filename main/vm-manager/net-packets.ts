/**
 * The few packets a network's gateway port answers on its switch (net-gateway.ts): ARP for the
 * gateway's address, DHCP (RFC 2131) and DNS (RFC 1035) over UDP on IPv4. Parsing is strict and
 * bounded (a frame is a guest's bytes: untrusted); anything else returns null and is ignored.
 * No routing, no TCP, no fragments: the switch (vde_switch) carries every other frame between
 * the VMs, and the gateway never forwards one.
 */

export type Mac = Buffer; // 6 bytes
export const BROADCAST_MAC = Buffer.alloc(6, 0xff);

export function macText(m: Mac): string {
  return [...m].map((b) => b.toString(16).padStart(2, '0')).join(':');
}
export function macBytes(text: string): Mac {
  return Buffer.from(text.split(':').join(''), 'hex');
}
export function ipNum(ip: string): number {
  return ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
}
export function ipText(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

export interface EthFrame {
  dst: Mac;
  src: Mac;
  type: number;
  payload: Buffer;
}

export function parseEth(f: Buffer): EthFrame | null {
  if (f.length < 14) return null;
  return { dst: f.subarray(0, 6), src: f.subarray(6, 12), type: f.readUInt16BE(12), payload: f.subarray(14) };
}

export function eth(dst: Mac, src: Mac, type: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(14);
  dst.copy(h, 0);
  src.copy(h, 6);
  h.writeUInt16BE(type, 12);
  const f = Buffer.concat([h, payload]);
  return f.length >= 60 ? f : Buffer.concat([f, Buffer.alloc(60 - f.length)]);
}

export const ETH_ARP = 0x0806;
export const ETH_IP = 0x0800;

/** An ARP request for `target`: who asks (mac, ip). */
export function parseArpRequest(p: Buffer): { senderMac: Mac; senderIp: number; targetIp: number } | null {
  if (p.length < 28 || p.readUInt16BE(0) !== 1 || p.readUInt16BE(2) !== ETH_IP || p[4] !== 6 || p[5] !== 4 || p.readUInt16BE(6) !== 1)
    return null;
  return { senderMac: p.subarray(8, 14), senderIp: p.readUInt32BE(14), targetIp: p.readUInt32BE(24) };
}

export function arpReply(ourMac: Mac, ourIp: number, toMac: Mac, toIp: number): Buffer {
  const p = Buffer.alloc(28);
  p.writeUInt16BE(1, 0);
  p.writeUInt16BE(ETH_IP, 2);
  p[4] = 6;
  p[5] = 4;
  p.writeUInt16BE(2, 6);
  ourMac.copy(p, 8);
  p.writeUInt32BE(ourIp >>> 0, 14);
  toMac.copy(p, 18);
  p.writeUInt32BE(toIp >>> 0, 24);
  return p;
}

export interface UdpPacket {
  src: number;
  dst: number;
  sport: number;
  dport: number;
  data: Buffer;
}

/** A whole (unfragmented) IPv4 UDP datagram, or null. */
export function parseUdp(p: Buffer): UdpPacket | null {
  if (p.length < 28 || p[0]! >> 4 !== 4) return null;
  const ihl = (p[0]! & 15) * 4;
  const total = p.readUInt16BE(2);
  if (ihl < 20 || total > p.length || total < ihl + 8 || p[9] !== 17) return null;
  if ((p.readUInt16BE(6) & 0x3fff) !== 0) return null; // a fragment
  const u = p.subarray(ihl, total);
  const len = u.readUInt16BE(4);
  if (len < 8 || len > u.length) return null;
  return { src: p.readUInt32BE(12), dst: p.readUInt32BE(16), sport: u.readUInt16BE(0), dport: u.readUInt16BE(2), data: u.subarray(8, len) };
}

function checksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < b.length; i += 2) sum += b.readUInt16BE(i);
  if (b.length % 2) sum += b[b.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** An IPv4 header + UDP datagram (UDP checksum 0: optional on IPv4). */
export function udp(src: number, dst: number, sport: number, dport: number, data: Buffer): Buffer {
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(28 + data.length, 2);
  ip.writeUInt16BE(0x4000, 6); // don't fragment
  ip[8] = 64;
  ip[9] = 17;
  ip.writeUInt32BE(src >>> 0, 12);
  ip.writeUInt32BE(dst >>> 0, 16);
  ip.writeUInt16BE(checksum(ip), 10);
  const u = Buffer.alloc(8);
  u.writeUInt16BE(sport, 0);
  u.writeUInt16BE(dport, 2);
  u.writeUInt16BE(8 + data.length, 4);
  return Buffer.concat([ip, u, data]);
}

// ---- DHCP ------------------------------------------------------------------------------------

export const DHCP = { DISCOVER: 1, OFFER: 2, REQUEST: 3, DECLINE: 4, ACK: 5, NAK: 6, RELEASE: 7, INFORM: 8 } as const;
const MAGIC = 0x63825363;

export interface DhcpRequest {
  xid: number;
  flags: number;
  chaddr: Mac;
  type: number;
  requested: number | null;
}

export function parseDhcp(d: Buffer): DhcpRequest | null {
  if (d.length < 240 || d[0] !== 1 || d[1] !== 1 || d[2] !== 6 || d.readUInt32BE(236) !== MAGIC) return null;
  let type = 0;
  let requested: number | null = null;
  for (let i = 240; i < d.length;) {
    const code = d[i]!;
    if (code === 255) break;
    if (code === 0) {
      i++;
      continue;
    }
    const len = d[i + 1];
    if (len === undefined || i + 2 + len > d.length) return null;
    if (code === 53 && len === 1) type = d[i + 2]!;
    if (code === 50 && len === 4) requested = d.readUInt32BE(i + 2);
    i += 2 + len;
  }
  if (!type) return null;
  return { xid: d.readUInt32BE(4), flags: d.readUInt16BE(10), chaddr: d.subarray(28, 34), type, requested };
}

export interface DhcpAnswer {
  type: number;
  yiaddr: number;
  server: number;
  mask: number;
  leaseSeconds: number;
  dns: number | null;
  router: number | null;
  hostname: string | null;
  domain: string | null;
}

export function dhcpReply(req: DhcpRequest, a: DhcpAnswer): Buffer {
  const b = Buffer.alloc(240);
  b[0] = 2;
  b[1] = 1;
  b[2] = 6;
  b.writeUInt32BE(req.xid, 4);
  b.writeUInt16BE(req.flags, 10);
  b.writeUInt32BE(a.yiaddr >>> 0, 16);
  b.writeUInt32BE(a.server >>> 0, 20);
  req.chaddr.copy(b, 28);
  b.writeUInt32BE(MAGIC, 236);
  const opts: Buffer[] = [];
  const opt = (code: number, v: Buffer) => opts.push(Buffer.from([code, v.length]), v);
  const u32 = (n: number) => {
    const x = Buffer.alloc(4);
    x.writeUInt32BE(n >>> 0);
    return x;
  };
  opt(53, Buffer.from([a.type]));
  opt(54, u32(a.server));
  if (a.type !== DHCP.NAK) {
    opt(51, u32(a.leaseSeconds));
    opt(1, u32(a.mask));
    if (a.router !== null) opt(3, u32(a.router));
    if (a.dns !== null) opt(6, u32(a.dns));
    if (a.hostname) opt(12, Buffer.from(a.hostname.slice(0, 63), 'ascii'));
    if (a.domain) opt(15, Buffer.from(a.domain.slice(0, 253), 'ascii'));
  }
  opts.push(Buffer.from([255]));
  return Buffer.concat([b, ...opts]);
}

// ---- DNS -------------------------------------------------------------------------------------

export interface DnsQuery {
  id: number;
  flags: number;
  name: string;
  qtype: number;
  qclass: number;
  /** the question section as received, echoed in the answer */
  question: Buffer;
}

/** One question, no compression in it (what resolvers send); null otherwise. */
export function parseDnsQuery(d: Buffer): DnsQuery | null {
  if (d.length < 17 || d.length > 512) return null;
  const flags = d.readUInt16BE(2);
  if (flags & 0x8000 || d.readUInt16BE(4) !== 1) return null; // a response, or not one question
  const labels: string[] = [];
  let i = 12;
  for (;;) {
    const len = d[i];
    if (len === undefined || len > 63) return null;
    i++;
    if (len === 0) break;
    if (i + len > d.length) return null;
    labels.push(d.subarray(i, i + len).toString('latin1'));
    i += len;
  }
  if (i + 4 > d.length) return null;
  return {
    id: d.readUInt16BE(0),
    flags,
    name: labels.join('.').toLowerCase(),
    qtype: d.readUInt16BE(i),
    qclass: d.readUInt16BE(i + 2),
    question: d.subarray(12, i + 4),
  };
}

export const DNS_A = 1;
export const RCODE = { OK: 0, NXDOMAIN: 3, REFUSED: 5 } as const;

/** An authoritative answer: `ip` as one A record (ttl seconds), or none with `rcode`. */
export function dnsAnswer(q: DnsQuery, ip: number | null, rcode: number, ttl = 60): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(q.id, 0);
  h.writeUInt16BE(0x8000 | 0x0400 | (q.flags & 0x0100) | 0x0080 | rcode, 2); // QR AA RD(echo) RA rcode
  h.writeUInt16BE(1, 4);
  h.writeUInt16BE(ip === null ? 0 : 1, 6);
  if (ip === null) return Buffer.concat([h, q.question]);
  const rr = Buffer.alloc(16);
  rr.writeUInt16BE(0xc00c, 0); // the name in the question
  rr.writeUInt16BE(DNS_A, 2);
  rr.writeUInt16BE(1, 4);
  rr.writeUInt32BE(ttl, 6);
  rr.writeUInt16BE(4, 10);
  rr.writeUInt32BE(ip >>> 0, 12);
  return Buffer.concat([h, q.question, rr]);
}
