/**
 * A strict double of giantswarm's vm-manager, built only from its OpenAPI document (through
 * main/vm-api/schemas.ts, which mirrors api/openapi.yaml @ dc39fe35): every request body is parsed
 * with the document's strict request schema (an unknown field is invalid_request), every answer is
 * parsed with the document's schema before it is sent (so only documented fields leave), errors
 * have the document's shape and codes. It keeps VMs in memory and walks them through the documented
 * states over time; it has no guests: exec understands `echo`, `false` and `sh -c "exit N"`, and a
 * forward answers with a small TCP service naming the VM and port.
 *
 * Test switches: a bearer check (static tokens or an issuer's), a proxy in front that answers 504
 * after proxyTimeoutMs, dropping the answer of the next create, https with a given key/cert.
 */
import { randomBytes } from 'node:crypto';
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import { createServer as createTcp, type Server as TcpServer } from 'node:net';
import type { z } from 'zod';
import {
  API_PREFIX,
  CONSOLE_LINES,
  CREATE_VM_DEFAULTS,
  ERROR_STATUS,
  ROUTES,
  errorSchema,
  type ApiErrorCode,
  type ApiVm,
  type Network,
  type OperationId,
} from '../../main/vm-api/schemas';

export interface DoubleOptions {
  tokenOk: (token: string) => boolean;
  /** ms per lifecycle step (creating → installing → booting → attesting → ready) */
  stepMs?: number;
  https?: { key: string; cert: string };
  /** a proxy in front: an answer slower than this is replaced by a 504 HTML page (the work goes on) */
  proxyTimeoutMs?: number;
}

class Fail extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const LIFECYCLE = ['creating', 'installing', 'booting', 'attesting', 'ready'] as const;

interface VmState {
  vm: ApiVm;
  born: number;
  /** ms offset the current lifecycle counts from (start after stop) */
  since: number;
  forwards: TcpServer[];
  stopped: boolean;
}

export class StrictDouble {
  url = '';
  /** every request as "<operationId>" (or "unknown <METHOD> <path>") */
  readonly seen: string[] = [];
  /** drop the answer to the next POST /vms (the VM is still made): a lost response */
  dropNextCreate = false;
  private server: Server | null = null;
  private readonly vms = new Map<string, VmState>();
  private readonly networks = new Map<string, Network>();
  private readonly images = [
    {
      id: 'giantswarm-vm-base',
      version: '1.2.0',
      uki: '/var/lib/vm-manager/images/base_1.2.0.efi',
      disk: '/var/lib/vm-manager/images/base_1.2.0.raw',
      kubernetesVersions: ['1.31.2'],
    },
  ];

  constructor(private readonly o: DoubleOptions) {
    this.networks.set('default', {
      spec: { name: 'default', cidr: '10.100.0.0/24', gatewayIP: '10.100.0.1', enableIMDS: true },
      gateway: '10.100.0.1',
      leases: [],
    });
  }

  async start(): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    this.server = this.o.https ? createHttps(this.o.https, handler) : createHttp(handler);
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    const a = this.server.address() as { port: number };
    this.url = `${this.o.https ? 'https' : 'http'}://127.0.0.1:${a.port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.vms.values()) for (const f of s.forwards) f.close();
    this.server?.closeAllConnections?.();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** The VM's state now (the lifecycle advances with time). */
  private advance(s: VmState): ApiVm {
    if (s.stopped || ['failed', 'deleting', 'stopped', 'stopping'].includes(s.vm.state)) return s.vm;
    const steps = LIFECYCLE.filter((st) => st !== 'attesting' || s.vm.requireAttestation);
    const i = Math.min(steps.length - 1, Math.floor((Date.now() - s.since) / (this.o.stepMs ?? 100)));
    const state = steps[i]!;
    const now = new Date().toISOString();
    const vm = s.vm;
    if (state !== vm.state) {
      vm.state = state;
      if (state === 'booting') vm.installedAt ??= now;
      if (state === 'booting') vm.phase = 'boot';
      if (state === 'attesting') vm.attestation.nonceIssuedAt = now;
      if (state === 'ready') {
        vm.readyAt = now;
        vm.bootedAt ??= now;
        vm.booted = true;
        vm.attestation.userDataReleased = true;
        if (vm.requireAttestation) {
          vm.attestation.initrd = { verified: true, at: now };
          vm.attestation.ready = { verified: true, at: now };
        }
      }
    }
    return vm;
  }

  private get(id: string): VmState {
    const s = this.vms.get(id);
    if (!s) throw new Fail('not_found', `vm ${id} not found`);
    this.advance(s);
    return s;
  }

  private async body<S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<z.output<S>> {
    const parts: Buffer[] = [];
    for await (const d of req) parts.push(d as Buffer);
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      throw new Fail('invalid_request', 'the body is not JSON');
    }
    const r = schema.safeParse(json);
    if (!r.success) throw new Fail('invalid_request', r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
    return r.data;
  }

  private async waitFor(s: VmState, milestone: string): Promise<void> {
    const order = ['none', 'installed', 'attested', 'ready'];
    const reached = () => {
      const st = this.advance(s).state;
      if (milestone === 'installed') return st !== 'creating' && st !== 'installing';
      if (milestone === 'attested') return s.vm.attestation.userDataReleased;
      return st === 'ready';
    };
    if (!order.includes(milestone)) return;
    while (milestone !== 'none' && !reached()) await new Promise((r) => setTimeout(r, 20));
  }

  private async route(op: OperationId, p: Record<string, string>, req: IncomingMessage, url: URL): Promise<unknown> {
    switch (op) {
      case 'getHost':
        return {
          hostname: 'double',
          kernel: '6.1.0',
          cpus: 8,
          memoryBytes: 16 * 1024 ** 3,
          kvm: { path: '/dev/kvm', accessible: true },
          vhostVsock: { path: '/dev/vhost-vsock', accessible: true },
          qemu: { found: true, version: '8.2.2' },
          swtpm: { found: true, version: '0.8.0' },
          systemd: { found: true, version: '256' },
          ovmfCode: '/usr/share/OVMF/OVMF_CODE_4M.fd',
          storageProviders: ['fs'],
          ready: true,
        };
      case 'listImages':
        return this.images;
      case 'getImage': {
        const i = this.images.find((x) => x.id === p.ref || `${x.id}_${x.version}` === p.ref);
        if (!i) throw new Fail('not_found', `image ${p.ref} not found`);
        return i;
      }
      case 'listNetworks':
        return [...this.networks.values()].sort((a, b) => a.spec.name.localeCompare(b.spec.name));
      case 'createNetwork': {
        const b = await this.body(req, ROUTES.createNetwork.request);
        if (this.networks.has(b.name)) throw new Fail('conflict', `network ${b.name} exists`);
        const gw = b.cidr.replace(/\.\d+\/\d+$/, '.1');
        const n: Network = {
          spec: {
            name: b.name,
            cidr: b.cidr,
            gatewayIP: gw,
            enableIMDS: true,
            ...(b.dns_search_domain ? { dnsSearchDomain: b.dns_search_domain } : {}),
          },
          gateway: gw,
          leases: [],
        };
        this.networks.set(b.name, n);
        return n;
      }
      case 'getNetwork':
      case 'deleteNetwork': {
        const n = this.networks.get(p.name ?? '');
        if (!n) throw new Fail('not_found', `network ${p.name} not found`);
        if (op === 'getNetwork') return n;
        const users = [...this.vms.values()].filter((s) => s.vm.network === p.name).map((s) => s.vm.id);
        if (users.length) throw new Fail('conflict', `network ${p.name} has VMs attached: ${users.join(', ')}`);
        this.networks.delete(p.name ?? '');
        return undefined;
      }
      case 'listVMs':
        return [...this.vms.values()].map((s) => this.advance(s));
      case 'createVM': {
        const b = await this.body(req, ROUTES.createVM.request);
        const d = CREATE_VM_DEFAULTS;
        const image = b.image ?? `${this.images[0]!.id}_${this.images[0]!.version}`;
        if (!this.images.some((i) => i.id === image || `${i.id}_${i.version}` === image))
          throw new Fail('invalid_request', `image ${image} does not exist`);
        const network = b.network ?? d.network;
        if (!this.networks.has(network)) throw new Fail('invalid_request', `network ${network} does not exist`);
        if ([...this.vms.values()].some((s) => s.vm.name === b.name)) throw new Fail('conflict', `a VM named ${b.name} exists`);
        const id = randomBytes(4).toString('hex');
        const vm: ApiVm = {
          id,
          name: b.name,
          image,
          cpus: b.cpus ?? d.cpus,
          memoryMiB: b.memory_mib ?? d.memory_mib,
          diskGiB: b.disk_gib ?? d.disk_gib,
          network,
          requireAttestation: b.require_attestation ?? d.require_attestation,
          state: 'creating',
          phase: 'install',
          cid: 3 + this.vms.size,
          machineID: randomBytes(16).toString('hex'),
          booted: false,
          sshPublicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDouble',
          attestation: { required: b.require_attestation ?? d.require_attestation, userDataReleased: false },
          createdAt: new Date().toISOString(),
          paths: { dir: `/var/lib/vm-manager/vms/${id}`, console: `/var/lib/vm-manager/vms/${id}/console.log` },
        };
        const s: VmState = { vm, born: Date.now(), since: Date.now(), forwards: [], stopped: false };
        this.vms.set(id, s);
        this.networks.get(network)!.leases.push({ vmID: id, mac: '52:54:00:00:00:01', ip: '10.100.0.10' });
        await this.waitFor(s, b.wait_for ?? d.wait_for);
        return this.advance(s);
      }
      case 'getVM':
        return this.get(p.id ?? '').vm;
      case 'deleteVM': {
        const s = this.get(p.id ?? '');
        for (const f of s.forwards) f.close();
        this.vms.delete(s.vm.id);
        for (const n of this.networks.values()) n.leases = n.leases.filter((l) => l.vmID !== s.vm.id);
        return undefined;
      }
      case 'startVM': {
        const s = this.get(p.id ?? '');
        if (s.vm.state !== 'stopped' && s.vm.state !== 'failed')
          throw new Fail('conflict', `vm ${s.vm.id} is ${s.vm.state}; start needs stopped or failed`);
        s.stopped = false;
        s.vm.state = 'creating';
        s.since = Date.now() - 2 * (this.o.stepMs ?? 100); // from booting: it is installed
        return this.advance(s);
      }
      case 'stopVM':
      case 'rebootVM': {
        const s = this.get(p.id ?? '');
        if (['stopped', 'failed', 'stopping', 'deleting'].includes(s.vm.state))
          throw new Fail('conflict', `vm ${s.vm.id} is ${s.vm.state}`);
        if (op === 'stopVM') {
          s.stopped = true;
          s.vm.state = 'stopped';
        } else {
          s.vm.state = 'creating';
          s.since = Date.now() - 2 * (this.o.stepMs ?? 100);
        }
        return this.advance(s);
      }
      case 'execVM': {
        const b = await this.body(req, ROUTES.execVM.request);
        const s = this.get(p.id ?? '');
        if (s.vm.state !== 'ready' && s.vm.state !== 'running')
          throw new Fail('conflict', `vm ${s.vm.id} is ${s.vm.state}; exec needs a running guest`);
        const [prog, ...args] = b.command;
        if (prog === 'echo') return { stdout: `${args.join(' ')}\n`, stderr: '', exitCode: 0 };
        if (prog === 'false') return { stdout: '', stderr: '', exitCode: 1 };
        const script = prog === 'sh' && args[0] === '-c' ? (args[1] ?? '') : null;
        const exit = script === null ? null : /^exit (\d+)$/.exec(script);
        if (exit) return { stdout: '', stderr: '', exitCode: Number(exit[1]) };
        const echo = script === null ? null : /^echo (.*)$/.exec(script);
        if (echo) return { stdout: `${echo[1]}\n`, stderr: '', exitCode: 0 };
        return { stdout: '', stderr: `sh: ${prog}: not found\n`, exitCode: 127 };
      }
      case 'forwardPort': {
        const b = await this.body(req, ROUTES.forwardPort.request);
        const s = this.get(p.id ?? '');
        if (s.vm.state !== 'ready' && s.vm.state !== 'running')
          throw new Fail('conflict', `vm ${s.vm.id} is ${s.vm.state}; forward needs a running guest`);
        const guest = createTcp((c) => {
          c.write(`guest ${s.vm.id}:${b.port}\n`);
          c.pipe(c);
        });
        await new Promise<void>((r) => guest.listen(0, '127.0.0.1', () => r()));
        s.forwards.push(guest);
        return { id: randomBytes(4).toString('hex'), port: b.port, address: `127.0.0.1:${(guest.address() as { port: number }).port}` };
      }
      case 'getVMConsole': {
        const raw = url.searchParams.get('lines') ?? String(CONSOLE_LINES.default);
        const n = Number(raw);
        if (!/^\d+$/.test(raw) || n < 1 || n > CONSOLE_LINES.max)
          throw new Fail('invalid_request', `lines must be 1..${CONSOLE_LINES.max}`);
        const s = this.get(p.id ?? '');
        const all = Array.from(
          { length: 3 + Math.floor((Date.now() - s.born) / 50) },
          (_, i) => `[${i}] ${s.vm.name} ${i === 0 ? 'booting' : 'log line'}`,
        );
        const tail = all.slice(-n);
        return { id: s.vm.id, lines: tail.length, console: tail.join('\n') };
      }
      case 'getVMAttestation':
        return this.get(p.id ?? '').vm.attestation;
      case 'getVMMetrics': {
        const s = this.get(p.id ?? '');
        return {
          id: s.vm.id,
          host: {
            state: s.vm.state,
            attestation: s.vm.requireAttestation ? (s.vm.attestation.userDataReleased ? 'released' : 'pending') : 'disabled',
            disk_bytes: s.vm.diskGiB * 1024 ** 3,
            network: { name: s.vm.network, bytes_sent: 0, bytes_received: 0, leases: 1 },
          },
          guest: null,
          note: 'the guest has not uploaded a report',
        };
      }
      case 'getVMReport':
        this.get(p.id ?? '');
        throw new Fail('not_found', 'no upload yet');
      case 'getOpenAPI':
        return 'openapi: 3.1.0\ninfo:\n  title: strict double of vm-manager\n  version: v1\n';
    }
  }

  private match(method: string, path: string): [OperationId, Record<string, string>] | null {
    for (const [op, r] of Object.entries(ROUTES) as [OperationId, (typeof ROUTES)[OperationId]][]) {
      if (r.method !== method) continue;
      const names: string[] = [];
      const re = new RegExp(`^${r.path.replace(/\{(\w+)\}/g, (_, n: string) => (names.push(n), '([^/]+)'))}$`);
      const m = re.exec(path);
      if (m) return [op, Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? '')]))];
    }
    return null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    const send = (status: number, body: unknown, type = 'application/json') => {
      if (res.headersSent) return;
      if (body === undefined) return void res.writeHead(status).end();
      const text = type === 'application/json' ? JSON.stringify(body) : String(body);
      res.writeHead(status, { 'Content-Type': type }).end(text);
    };
    const fail = (code: ApiErrorCode, message: string) => send(ERROR_STATUS[code], errorSchema.parse({ error: { code, message } }));
    const auth = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    if (!auth || !this.o.tokenOk(auth[1]!)) {
      this.seen.push('unauthorized');
      res
        .writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer error="invalid_token"' })
        .end(JSON.stringify({ error: 'invalid_token', error_description: 'missing or invalid bearer token' }));
      return;
    }
    if (!url.pathname.startsWith(`${API_PREFIX}/`)) return fail('not_found', `no route ${url.pathname}`);
    const found = this.match(req.method ?? 'GET', url.pathname.slice(API_PREFIX.length));
    if (!found) {
      this.seen.push(`unknown ${req.method} ${url.pathname}`);
      return fail('not_found', `no route ${req.method} ${url.pathname}`);
    }
    const [op, params] = found;
    this.seen.push(op);
    const proxy = this.o.proxyTimeoutMs;
    const timer = proxy ? setTimeout(() => send(504, '<html><body><h1>504 Gateway Time-out</h1></body></html>', 'text/html'), proxy) : null;
    const lost = op === 'createVM' && this.dropNextCreate;
    if (lost) this.dropNextCreate = false;
    try {
      const out = await this.route(op, params, req, url);
      if (lost) return void req.socket.destroy();
      const r = ROUTES[op];
      if (r.response === null) return send(r.status, undefined);
      // Only what the document names leaves; an answer outside it is the double's own bug.
      const body = r.response.parse(out);
      send(r.status, body, op === 'getOpenAPI' ? 'application/yaml' : 'application/json');
    } catch (e) {
      if (e instanceof Fail) fail(e.code, e.message);
      else fail('internal_error', (e as Error).message);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
}
