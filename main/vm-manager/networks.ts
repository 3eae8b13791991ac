/**
 * Networks (GET/POST /networks, GET/DELETE /networks/{name}), kept in <state>/networks.json.
 *
 * giantswarm's networks are gvisor-tap-vsock switches shared by their VMs. Here every VM runs QEMU's
 * user-mode network (slirp) of its own: the guest is 169.254.169.15 behind a gateway at
 * 169.254.169.2, with the metadata service at 169.254.169.254, whatever network it is on. A network
 * is therefore a name with a policy: `default` (restricted: the guest reaches the metadata service
 * and its forwards only) and `nat` (outbound through the host too) always exist; a network made with
 * POST /networks records its cidr and search domain and is restricted. docs/vm-manager.md says what
 * has no meaning here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GUEST_NET, type VmNetwork } from './argv';
import { VmmError } from './errors';
import { writeJsonAtomic } from './images';

export interface NetworkEntry {
  name: string;
  cidr: string;
  gatewayIP: string;
  dnsSearchDomain: string | null;
  mode: VmNetwork;
  builtin: boolean;
  createdAt: string;
}

/** QEMU's default MAC for the first NIC, the one every guest here has. */
export const GUEST_MAC = '52:54:00:12:34:56';

const BUILTIN: NetworkEntry[] = [
  { name: 'default', cidr: GUEST_NET.net, gatewayIP: GUEST_NET.host, dnsSearchDomain: null, mode: 'restricted', builtin: true, createdAt: '1970-01-01T00:00:00.000Z' },
  { name: 'nat', cidr: GUEST_NET.net, gatewayIP: GUEST_NET.host, dnsSearchDomain: null, mode: 'nat', builtin: true, createdAt: '1970-01-01T00:00:00.000Z' },
];

/** The first address of an IPv4 subnet: the document's gateway. */
export function firstAddress(cidr: string): string {
  const [ip = '', bits = '32'] = cidr.split('/');
  const n = ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const first = Math.floor(n / size) * size + 1;
  return [24, 16, 8, 0].map((s) => Math.floor(first / 2 ** s) % 256).join('.');
}

export class Networks {
  private readonly file: string;
  private made: NetworkEntry[];

  constructor(stateDir: string) {
    this.file = join(stateDir, 'networks.json');
    this.made = existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as NetworkEntry[]) : [];
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

  create(o: { name: string; cidr: string; dnsSearchDomain?: string }): NetworkEntry {
    if (this.has(o.name)) throw new VmmError('conflict', `a network named "${o.name}" exists`);
    const n: NetworkEntry = { name: o.name, cidr: o.cidr, gatewayIP: firstAddress(o.cidr), dnsSearchDomain: o.dnsSearchDomain ?? null, mode: 'restricted', builtin: false, createdAt: new Date().toISOString() };
    this.made.push(n);
    writeJsonAtomic(this.file, this.made);
    return n;
  }

  /** `attached`: ids of the VMs (running or stopped) on the network; any makes it a conflict. */
  delete(name: string, attached: string[]): void {
    const n = this.get(name);
    if (attached.length) throw new VmmError('conflict', `network "${name}" has VM${attached.length > 1 ? 's' : ''} ${attached.join(', ')} attached: delete ${attached.length > 1 ? 'them' : 'it'} first`);
    if (n.builtin) throw new VmmError('conflict', `network "${name}" is built in (every VM here has its own user-mode network; "${name}" is its policy) and cannot be deleted`);
    this.made = this.made.filter((x) => x.name !== name);
    writeJsonAtomic(this.file, this.made);
  }
}
