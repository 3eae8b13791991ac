/**
 * A network's switch and gateway port without a guest: a real vde_switch (LanSwitches) with the
 * gateway plugged in, and this test as a second port speaking raw frames through vde_plug. DHCP
 * answers only a MAC with a lease, with that lease; DNS answers the VMs' names and nothing else
 * while Internet access is off; ARP answers the gateway's address. Leases are allocated from the
 * cidr after the gateway.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_MAC } from '../../main/vm-manager/net-gateway';
import {
  BROADCAST_MAC,
  eth,
  ETH_ARP,
  ETH_IP,
  ipNum,
  ipText,
  macBytes,
  macText,
  parseEth,
  parseUdp,
  udp,
} from '../../main/vm-manager/net-packets';
import { LanSwitches } from '../../main/vm-manager/net-switch';
import { leaseFor, macFor, type NetworkEntry } from '../../main/vm-manager/networks';
import { needs } from '../support/system';
import { pidsWith } from './support';

describe('leases', () => {
  const n = { name: 'lab', cidr: '10.9.8.0/29', gatewayIP: '10.9.8.1' };
  it('are the lowest free addresses after the gateway, never the broadcast one, with the id in the MAC', () => {
    expect(leaseFor(n, 'a1b2c3d4', [])).toEqual({ mac: '52:54:a1:b2:c3:d4', ip: '10.9.8.2' });
    expect(leaseFor(n, 'a1b2c3d4', ['10.9.8.2', '10.9.8.4']).ip).toBe('10.9.8.3');
    expect(() => leaseFor(n, 'a1b2c3d4', ['10.9.8.2', '10.9.8.3', '10.9.8.4', '10.9.8.5', '10.9.8.6'])).toThrow(/no free address/);
    expect(() => macFor('../x')).toThrow(/8 hex/);
  });
});

const skip = needs(['vde_switch', 'vde_plug']);

function dhcpMessage(mac: string, type: number, requested?: string): Buffer {
  const b = Buffer.alloc(240);
  b[0] = 1;
  b[1] = 1;
  b[2] = 6;
  b.writeUInt32BE(0x1234abcd, 4);
  b.writeUInt16BE(0x8000, 10);
  macBytes(mac).copy(b, 28);
  b.writeUInt32BE(0x63825363, 236);
  const opts = [53, 1, type];
  if (requested) opts.push(50, 4, ...requested.split('.').map(Number));
  return Buffer.concat([b, Buffer.from([...opts, 255])]);
}

function dnsQuery(name: string): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(0x4242, 0);
  h.writeUInt16BE(0x0100, 2);
  h.writeUInt16BE(1, 4);
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  return Buffer.concat([h, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}

describe.skipIf(skip !== null)("a network's gateway port on a real switch", () => {
  const state = mkdtempSync(join(tmpdir(), 'vmm-gw-'));
  const entry: NetworkEntry = {
    name: 'lab',
    cidr: '10.9.8.0/24',
    gatewayIP: '10.9.8.1',
    dnsSearchDomain: 'pov.test',
    mode: 'restricted',
    builtin: false,
    internet: false,
    createdAt: '',
  };
  const leases = [{ mac: '52:54:00:00:00:0a', ip: '10.9.8.2', names: ['web'] }];
  const switches = new LanSwitches({ stateDir: state, leases: () => leases, entry: () => entry });
  let plug: ChildProcess;
  const got: Buffer[] = [];
  let buf = Buffer.alloc(0);
  const me = macBytes('52:54:00:00:00:0a');

  const send = (frame: Buffer) => {
    const h = Buffer.alloc(2);
    h.writeUInt16BE(frame.length);
    plug.stdin!.write(Buffer.concat([h, frame]));
  };
  const next = async (pred: (f: Buffer) => boolean, ms = 3000): Promise<Buffer | null> => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const i = got.findIndex(pred);
      if (i >= 0) return got.splice(i, 1)[0]!;
      await new Promise((r) => setTimeout(r, 20));
    }
    return null;
  };
  const udpTo = (port: number) => (f: Buffer) => {
    const e = parseEth(f);
    const u = e && e.type === ETH_IP ? parseUdp(e.payload) : null;
    return u !== null && u.dport === port;
  };

  beforeAll(async () => {
    const sock = await switches.up(entry);
    plug = spawn('vde_plug', [`vde://${sock}`], { stdio: ['pipe', 'pipe', 'inherit'] });
    plug.stdout!.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        got.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
    });
    await new Promise((r) => setTimeout(r, 300));
  });

  afterAll(async () => {
    plug?.kill();
    await switches.down('lab');
    expect(pidsWith(state)).toEqual([]);
    rmSync(state, { recursive: true, force: true });
  });

  it('DHCP: the lease to its MAC (offer, then ack), a NAK for another address, nothing for a MAC without one', async () => {
    send(eth(BROADCAST_MAC, me, ETH_IP, udp(0, 0xffffffff, 68, 67, dhcpMessage('52:54:00:00:00:0a', 1))));
    const offer = await next(udpTo(68));
    expect(offer).not.toBeNull();
    const d = parseUdp(parseEth(offer!)!.payload)!.data;
    expect(ipText(d.readUInt32BE(16))).toBe('10.9.8.2');
    expect(macText(parseEth(offer!)!.src)).toBe(GATEWAY_MAC);
    const opts = d.subarray(240);
    expect([...opts.subarray(0, 3)]).toEqual([53, 1, 2]); // OFFER
    expect(opts.includes(Buffer.from('pov.test'))).toBe(true);
    send(eth(BROADCAST_MAC, me, ETH_IP, udp(0, 0xffffffff, 68, 67, dhcpMessage('52:54:00:00:00:0a', 3, '10.9.8.2'))));
    expect([...parseUdp(parseEth((await next(udpTo(68)))!)!.payload)!.data.subarray(240, 243)]).toEqual([53, 1, 5]); // ACK
    send(eth(BROADCAST_MAC, me, ETH_IP, udp(0, 0xffffffff, 68, 67, dhcpMessage('52:54:00:00:00:0a', 3, '10.9.8.77'))));
    expect([...parseUdp(parseEth((await next(udpTo(68)))!)!.payload)!.data.subarray(240, 243)]).toEqual([53, 1, 6]); // NAK
    const stranger = macBytes('52:54:00:00:00:0b');
    send(eth(BROADCAST_MAC, stranger, ETH_IP, udp(0, 0xffffffff, 68, 67, dhcpMessage('52:54:00:00:00:0b', 1))));
    expect(await next(udpTo(68), 1000)).toBeNull();
  });

  it("ARP for the gateway, DNS for the VMs' names (bare and in the search domain), NXDOMAIN for others", async () => {
    const arp = Buffer.alloc(28);
    arp.writeUInt16BE(1, 0);
    arp.writeUInt16BE(0x0800, 2);
    arp[4] = 6;
    arp[5] = 4;
    arp.writeUInt16BE(1, 6);
    me.copy(arp, 8);
    arp.writeUInt32BE(ipNum('10.9.8.2'), 14);
    arp.writeUInt32BE(ipNum('10.9.8.1'), 24);
    send(eth(BROADCAST_MAC, me, ETH_ARP, arp));
    const reply = await next((f) => parseEth(f)?.type === ETH_ARP);
    expect(macText(reply!.subarray(14 + 8, 14 + 14))).toBe(GATEWAY_MAC);
    const gw = macBytes(GATEWAY_MAC);
    for (const [name, want] of [
      ['web', '10.9.8.2'],
      ['WEB.pov.test', '10.9.8.2'],
      ['example.com', null],
    ] as const) {
      send(eth(gw, me, ETH_IP, udp(ipNum('10.9.8.2'), ipNum('10.9.8.1'), 40000, 53, dnsQuery(name))));
      const a = await next(udpTo(40000));
      const data = parseUdp(parseEth(a!)!.payload)!.data;
      expect(data.readUInt16BE(0)).toBe(0x4242);
      if (want) expect(ipText(data.readUInt32BE(data.length - 4))).toBe(want);
      else expect(data.readUInt16BE(2) & 0xf).toBe(3);
    }
  });
});

describe.skipIf(skip !== null)("a manager closed while its network's switch goes down", () => {
  it('the next manager on the state dir starts its own switch, and the old down does not remove it', async () => {
    const state = mkdtempSync(join(tmpdir(), 'vmm-sw-'));
    const entry: NetworkEntry = {
      name: 'lan',
      cidr: '10.9.7.0/24',
      gatewayIP: '10.9.7.1',
      dnsSearchDomain: 'pov.test',
      mode: 'restricted',
      builtin: false,
      internet: false,
      createdAt: '',
    };
    const opts = { stateDir: state, leases: () => [], entry: () => entry };
    try {
      const old = new LanSwitches(opts);
      await old.up(entry);
      void old.down('lan'); // its last VM stopped: the switch goes down in the background
      await old.detach(); // the manager closes
      const next = new LanSwitches(opts);
      await next.up(entry);
      await new Promise((r) => setTimeout(r, 2500)); // longer than a down waits for its switch to end
      expect(next.running('lan')).toBe(true);
      await next.down('lan');
      expect(pidsWith(state)).toEqual([]);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
