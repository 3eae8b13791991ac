/**
 * Guest ports forwarded to the laptop. The manager's forward (POST /vms/{id}/forward) exposes the
 * guest port on the manager host's loopback and, as giantswarm's document says, lives until the VM
 * is deleted; the document has no way to list or remove one. So what the app lists and removes is
 * its own listener on this machine's 127.0.0.1 that relays to the manager's address: removing it
 * closes the port the person uses. Listeners live as long as the app's core.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { AppError } from '../../../shared/contract/errors';
import type { VmForward } from '../../../shared/contract/vm';

interface Relay {
  view: VmForward;
  server: Server;
  sockets: Set<Socket>;
}

/** "127.0.0.1:4321" → host and port; only a loopback address is relayed to. */
function parseAddress(address: string): { host: string; port: number } {
  const m = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost):(\d{1,5})$/.exec(address);
  const port = Number(m?.[2]);
  if (!m || !(port >= 1 && port <= 65535))
    throw new AppError('internal', `the vm-manager's forward address "${address}" is not a loopback ip:port`);
  return { host: m[1] === '[::1]' ? '::1' : m[1]!, port };
}

export class ForwardRelays {
  private readonly relays = new Map<string, Relay>();

  list(vmId?: string): VmForward[] {
    return [...this.relays.values()].map((r) => r.view).filter((v) => !vmId || v.vmId === vmId);
  }

  /** Opens 127.0.0.1:<free port> relaying to the manager's address for (vmId, guestPort). */
  async open(vmId: string, vmName: string, guestPort: number, managerAddress: string): Promise<VmForward> {
    const existing = [...this.relays.values()].find((r) => r.view.vmId === vmId && r.view.guestPort === guestPort);
    if (existing) return existing.view;
    const target = parseAddress(managerAddress);
    const sockets = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = createConnection(target);
      sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const view: VmForward = {
      id: randomBytes(6).toString('hex'),
      vmId,
      vmName,
      guestPort,
      localAddress: `127.0.0.1:${port}`,
      managerAddress,
    };
    this.relays.set(view.id, { view, server, sockets });
    return view;
  }

  async close(id: string): Promise<void> {
    const r = this.relays.get(id);
    if (!r) throw new AppError('not_found', `no forward ${id} (it was removed, or the app restarted)`);
    this.relays.delete(id);
    for (const s of r.sockets) s.destroy();
    await new Promise<void>((resolve) => r.server.close(() => resolve()));
  }

  /** Removes the forwards of a VM (deleted) or all (the core closes). */
  async closeAll(vmId?: string): Promise<void> {
    for (const v of this.list(vmId)) await this.close(v.id);
  }
}
