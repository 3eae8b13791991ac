/**
 * A vm-manager for local-POV tests without a real boot: the daemon's real REST handler, VM
 * service, records and networks, with gsd's fake launcher in place of QEMU (as in
 * test/vm-api/daemon.test.ts), on a loopback port. Everything the Local platform calls is real
 * HTTP against the real handler; only the processes are fake.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VmManagerClient } from '../../main/vm-api/client';
import { createApiHandler } from '../../main/vm-manager/api';
import { hostReport } from '../../main/vm-manager/host';
import { MetadataService } from '../../main/vm-manager/metadata';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { leaseFor, Networks } from '../../main/vm-manager/networks';
import { VmService } from '../../main/vm-manager/vms';
import type { LocalVmApi } from '../../main/services/lab-platforms/local';
import type { LocalTemplate, TemplateSource } from '../../main/services/lab-platforms/platform';
import { needs } from '../support/system';
import { attestingGuest, FakeLauncher } from '../vm-manager/fake-launcher';
import { metadataGet } from '../vm-manager/support';

export const fakeManagerSkip = needs(['qemu-system-x86_64', 'swtpm', 'dropbearkey', 'ssh-keygen']);
export const TOKEN = 'local-pov-token-0123456789abcdef';

export interface FakeManager {
  url: string;
  /** The manager's state dir (removed by close). */
  state: string;
  vms: VmService;
  launcher: FakeLauncher;
  client: VmManagerClient;
  /** Names of every VM the manager has. */
  names(): Promise<string[]>;
  /** Names of the networks made with POST /networks (not the built-in ones), each with the names of its VMs. */
  networks(): Promise<{ name: string; vms: string[] }[]>;
  /** What the guest of `vmId` reads at /skytap/vms/self/user_data (the metadata service, as the runner asks it). */
  guestUserData(vmId: string): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
}

export async function fakeManager(): Promise<FakeManager> {
  const state = mkdtempSync(join(tmpdir(), 'vmm-localpov-'));
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
  const launcher = new FakeLauncher();
  const networks = new Networks(state);
  const vms = new VmService({
    stateDir: state,
    launcher,
    networkMode: (n) => networks.get(n).mode,
    // leases as the daemon makes them (addresses on the POV's network); the fake launcher starts no switch
    lan: { leaseFor: (n, id, taken) => leaseFor(networks.get(n), id, taken), up: async (n) => `/no-switch/${n}` },
    timeouts: { startMs: 1000, bootMs: 1500, powerdownMs: 200, termMs: 200 },
  });
  launcher.onStart = attestingGuest(vms);
  const sock = join(state, 'metadata.sock');
  const metadata = new MetadataService({ socketPath: sock, vms, stateDir: state });
  await metadata.listen();
  const server = createServer(createApiHandler({ stateDir: state, token: TOKEN, vms, networks, host: () => hostReport() }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new VmManagerClient(url, TOKEN, 20_000);
  return {
    url,
    state,
    vms,
    launcher,
    client,
    names: async () => (await client.list()).map((v) => v.name).sort(),
    networks: async () => {
      const vmList = await client.list();
      return (await client.networks())
        .filter((n) => n.spec.name !== 'default' && n.spec.name !== 'nat')
        .map((n) => ({
          name: n.spec.name,
          vms: vmList
            .filter((v) => v.network === n.spec.name)
            .map((v) => v.name)
            .sort(),
        }));
    },
    guestUserData: (vmId) => metadataGet(sock, vmId, '/skytap/vms/self/user_data'),
    async close() {
      vms.detach();
      await metadata.close();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(state, { recursive: true, force: true });
    },
  };
}

/** A two-VM local template on the test image (small sizes: the launcher is fake). */
export const TWO_VMS: LocalTemplate = {
  id: 'two-vms',
  name: 'Two VMs',
  description: null,
  builtIn: false,
  vms: [
    { name: 'control', image: TEST_IMAGE, os: 'linux', cpus: 1, memoryMib: 256, diskGib: 1, requireAttestation: true },
    { name: 'target', image: TEST_IMAGE, os: 'windows', cpus: 1, memoryMib: 256, diskGib: 1, requireAttestation: true },
  ],
};

export const templatesOf = (...ts: LocalTemplate[]): TemplateSource => ({ get: (id) => ts.find((t) => t.id === id) ?? null });

/**
 * A client that throws at its Nth mutating call (create/start/stop/delete/setUserData, a network's
 * create/delete), counting
 * from 1, as if the process died there; reads pass. `arm(n)` sets N (null: never), `calls` lists
 * the mutating calls made, in order.
 */
export function crashingClient(real: VmManagerClient): { api: LocalVmApi; arm(n: number | null): void; calls: string[] } {
  let at: number | null = null;
  const calls: string[] = [];
  const gate = (what: string) => {
    calls.push(what);
    if (at !== null && calls.length === at) {
      at = null;
      throw new Error(`injected crash at mutating call ${calls.length} (${what})`);
    }
  };
  const api: LocalVmApi = {
    list: () => real.list(),
    get: (id) => real.get(id),
    create: async (body) => (gate(`create ${body.name}`), real.create(body)),
    start: async (id) => (gate(`start ${id}`), real.start(id)),
    stop: async (id) => (gate(`stop ${id}`), real.stop(id)),
    delete: async (id) => (gate(`delete ${id}`), real.delete(id)),
    setUserData: async (id, data) => (gate(`user-data ${id}`), real.setUserData(id, data)),
    networks: () => real.networks(),
    createNetwork: async (body) => (gate(`create network ${body.name}`), real.createNetwork(body)),
    deleteNetwork: async (name) => (gate(`delete network ${name}`), real.deleteNetwork(name)),
  };
  return {
    api,
    arm: (n) => {
      at = n === null ? null : calls.length + n;
    },
    calls,
  };
}
