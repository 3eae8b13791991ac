/**
 * Networks (GET/POST /networks, GET/DELETE /networks/{name}), kept in <state>/networks.json.
 *
 * A network is a private Ethernet segment shared by its VMs (giantswarm's are gvisor-tap-vsock
 * switches): a vde_switch with a gateway port answering ARP, DHCP and DNS (net-switch.ts,
 * net-gateway.ts), joined by each VM's second NIC (eth1). A VM's address on it is its lease, fixed
 * in its record at create (leaseFor): the gateway is the cidr's first address, the VMs get the next
 * free ones. Every VM also keeps its own user-mode NIC (eth0, slirp): the metadata service, the
 * host's forwards into the guest and its `mode`: `restricted` fences it off the host, `nat` lets it
 * out through the host. `default` (restricted) and `nat` always exist; a network made with POST
 * /networks is restricted. `internet`: the POV's "Internet access" (DNS beyond the VMs' names).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VmNetwork } from './argv';
import { VmmError } from './errors';
import { writeJsonAtomic } from './images';
import { ipNum, ipText } from './net-packets';

export interface NetworkEntry {
  name: string;
  cidr: string;
  gatewayIP: string;
  dnsSearchDomain: string | null;
  mode: VmNetwork;
  builtin: boolean;
  /** unknown names are resolved through the host (the POV's "Internet access") */
  internet: boolean;
  createdAt: string;
}

/** A VM's place on its network: the MAC of its eth1 and the address DHCP gives it. */
export interface Lease {
  mac: string;
  ip: string;
}

const BUILTIN: NetworkEntry[] = [
  {
    name: 'default',
    cidr: '192.168.127.0/24',
    gatewayIP: '192.168.127.1',
    dnsSearchDomain: null,
    mode: 'restricted',
    builtin: true,
    internet: false,
    createdAt: '1970-01-01T00:00:00.000Z',
  },
  {
    name: 'nat',
    cidr: '192.168.128.0/24',
    gatewayIP: '192.168.128.1',
    dnsSearchDomain: null,
    mode: 'nat',
    builtin: true,
    internet: false,
    createdAt: '1970-01-01T00:00:00.000Z',
  },
];

/** A VM's MAC on its network: 52:54 (QEMU's prefix) and its 4-byte id, so it is unique among the manager's VMs. */
export function macFor(vmId: string): string {
  if (!/^[0-9a-f]{8}$/.test(vmId)) throw new VmmError('internal', `VM id "${vmId}" is not 8 hex digits`);
  return ['52', '54', ...(vmId.match(/../g) ?? [])].join(':');
}

/** The lowest address of the cidr after the gateway that no lease in `taken` holds (never the broadcast address). */
export function leaseFor(n: Pick<NetworkEntry, 'name' | 'cidr' | 'gatewayIP'>, vmId: string, taken: string[]): Lease {
  const [ip = '', bits = '32'] = n.cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const base = Math.floor(ipNum(ip) / size) * size;
  const used = new Set([...taken, n.gatewayIP]);
  for (let a = base + 1; a < base + size - 1; a++) {
    if (!used.has(ipText(a))) return { mac: macFor(vmId), ip: ipText(a) };
  }
  throw new VmmError('conflict', `network "${n.name}" (${n.cidr}) has no free address left: delete a VM on it or use a larger network`);
}

/** The first address of an IPv4 subnet: the document's gateway. */
export function firstAddress(cidr: string): string {
  const [ip = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return ipText(Math.floor(ipNum(ip) / size) * size + 1);
}

export class Networks {
  private readonly file: string;
  private made: NetworkEntry[];

  constructor(stateDir: string) {
    this.file = join(stateDir, 'networks.json');
    // Entries from before real networks have no `internet` (off).
    this.made = existsSync(this.file)
      ? (JSON.parse(readFileSync(this.file, 'utf8')) as NetworkEntry[]).map((n) => ({ ...n, internet: n.internet ?? false }))
      : [];
  }

  list(): NetworkEntry[] {
    return [...BUILTIN, ...this.made].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): NetworkEntry {
    const n = this.list().find((x) => x.name === name);
    if (!n) throw new VmmError('not_found', `no network "${name}": list them with GET /api/v1/networks`);
    return n;
  }

  has(name: string): boolean {
    return this.list().some((x) => x.name === name);
  }

  create(o: { name: string; cidr: string; dnsSearchDomain?: string; internet?: boolean }): NetworkEntry {
    if (this.has(o.name)) throw new VmmError('conflict', `a network named "${o.name}" exists`);
    const n: NetworkEntry = {
      name: o.name,
      cidr: o.cidr,
      gatewayIP: firstAddress(o.cidr),
      dnsSearchDomain: o.dnsSearchDomain ?? null,
      mode: 'restricted',
      builtin: false,
      internet: o.internet ?? false,
      createdAt: new Date().toISOString(),
    };
    this.made.push(n);
    writeJsonAtomic(this.file, this.made);
    return n;
  }

  /** Turns the network's Internet access on or off (a built-in network keeps its own). */
  setInternet(name: string, on: boolean): NetworkEntry {
    const n = this.get(name);
    if (n.builtin) throw new VmmError('conflict', `network "${name}" is built in; its Internet access cannot be changed`);
    const made = this.made.find((x) => x.name === name)!;
    made.internet = on;
    writeJsonAtomic(this.file, this.made);
    return made;
  }

  /** `attached`: ids of the VMs (running or stopped) on the network; any makes it a conflict. */
  delete(name: string, attached: string[]): void {
    const n = this.get(name);
    if (attached.length)
      throw new VmmError(
        'conflict',
        `network "${name}" has VM${attached.length > 1 ? 's' : ''} ${attached.join(', ')} attached: ` +
          `delete ${attached.length > 1 ? 'them' : 'it'} first`,
      );
    if (n.builtin) throw new VmmError('conflict', `network "${name}" is built in and cannot be deleted`);
    this.made = this.made.filter((x) => x.name !== name);
    writeJsonAtomic(this.file, this.made);
  }
}
