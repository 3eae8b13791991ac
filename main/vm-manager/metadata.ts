/**
 * The metadata service the guest reaches at 169.254.169.254:80. QEMU runs guest/metadata-proxy.cjs
 * per guest connection; the proxy connects to our unix socket and sends one preamble line
 * ("POVDESK-VM <id>") before the guest's bytes, so we know which VM asks. Serves Skytap's own
 * paths (/skytap, /skytap/vms/self/user_data) and the attestation endpoints.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { chmodSync, rmSync } from 'node:fs';
import { goldenSizeWarning } from '../../shared/golden-size';
import { expectationsFor, goldenForSize, learnedSizes, NonceStore, verifyQuote, type Expectations } from './attest/index';
import { getImage, readPolicy } from './images';
import { NONCE_BURST, NONCE_REFILL_MS, RateLimiter } from './guest-limits';
import { sshHostKeyForGuest } from './ssh-host-key';
import type { VmService } from './vms';

/** A quote body carries the firmware's event log (at most 1 MiB, base64): room for it and the rest. */
const MAX_BODY = 2 * 1024 * 1024;

export interface MetadataOptions {
  socketPath: string;
  vms: VmService;
  stateDir: string;
  /** images whose VMs are in learn mode: PCRs with no golden value are accepted and reported as learned */
  learn?: string[];
  nonces?: NonceStore;
  /** nonce requests per VM (default: a burst of NONCE_BURST, one more every NONCE_REFILL_MS) */
  nonceLimit?: RateLimiter;
  log?: (msg: string) => void;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => {
      size += d.length;
      if (size > MAX_BODY) {
        reject(new Error(`body over ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      parts.push(d);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

export class MetadataService {
  readonly nonces: NonceStore;
  private readonly nonceLimit: RateLimiter;
  private raw: Server;
  private http = createHttpServer({ keepAlive: false }, (req, res) => {
    this.handle(req, res).catch((e) => {
      this.o.log?.(`metadata: ${e instanceof Error ? e.message : String(e)}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('internal error\n');
    });
  });
  private vmOf = new WeakMap<Socket, string>();
  private open = new Set<Socket>();

  constructor(private readonly o: MetadataOptions) {
    this.nonces = o.nonces ?? new NonceStore();
    this.nonceLimit = o.nonceLimit ?? new RateLimiter(NONCE_BURST, NONCE_REFILL_MS);
    o.vms.events.on('boot-reset', (id: string) => this.nonces.forget(id));
    o.vms.events.on('deleted', (id: string) => {
      this.nonces.forget(id);
      this.nonceLimit.forget(id);
    });
    this.raw = createNetServer((sock) => this.accept(sock));
  }

  set learn(images: string[]) {
    this.o.learn = images;
  }

  listen(): Promise<void> {
    rmSync(this.o.socketPath, { force: true });
    return new Promise((resolve, reject) => {
      this.raw.once('error', reject);
      this.raw.listen(this.o.socketPath, () => {
        chmodSync(this.o.socketPath, 0o600);
        resolve();
      });
    });
  }

  close(): Promise<void> {
    for (const s of this.open) s.destroy();
    return new Promise((resolve) => this.raw.close(() => resolve()));
  }

  private accept(sock: Socket) {
    this.open.add(sock);
    sock.once('close', () => this.open.delete(sock));
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const nl = buf.indexOf(10);
      if (nl < 0) {
        if (buf.length > 200) sock.destroy();
        return;
      }
      sock.off('data', onData);
      const m = /^POVDESK-VM ([0-9a-f]{8})$/.exec(buf.subarray(0, nl).toString('latin1').trim());
      if (!m?.[1]) {
        sock.destroy();
        return;
      }
      this.vmOf.set(sock, m[1]);
      sock.unshift(buf.subarray(nl + 1));
      this.http.emit('connection', sock);
    };
    sock.on('data', onData);
    sock.on('error', () => {});
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const vmId = this.vmOf.get(req.socket as Socket);
    const send = (status: number, body: string | object = '', headers: Record<string, string> = {}) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, {
        'Content-Type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
        'Content-Length': String(Buffer.byteLength(text)),
        Connection: 'close',
        ...headers,
      });
      res.end(text);
    };
    let vm;
    try {
      vm = vmId ? this.o.vms.get(vmId) : null;
    } catch {
      vm = null;
    }
    if (!vm || !vmId) return send(403, 'unknown VM\n');
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    this.o.vms.guestContact(vmId);

    if (req.method === 'GET' && (path === '/skytap/vms/self/user_data' || path === '/skytap' || path === '/skytap/')) {
      if (vm.requireAttestation && !vm.attestation.userDataReleased) {
        return send(503, "user-data is withheld until this VM's initrd-stage quote verifies\n", { 'Retry-After': '2' });
      }
      const ud = this.o.vms.readUserData(vmId);
      if (path === '/skytap/vms/self/user_data') return ud === null ? send(204) : send(200, ud);
      return send(200, { id: vm.id, name: vm.name, user_data: ud ?? '' });
    }
    if (req.method === 'GET' && path === '/povdesk/ssh-host-key') {
      // The VM's stable SSH host key, under the same gate as its user-data.
      if (vm.requireAttestation && !vm.attestation.userDataReleased) {
        return send(503, "the SSH host key is withheld until this VM's initrd-stage quote verifies\n", { 'Retry-After': '2' });
      }
      const key = sshHostKeyForGuest(vm.paths.dir);
      return key === null ? send(404, 'this VM has no SSH host key\n') : send(200, `${key}\n`);
    }
    if (req.method === 'GET' && path === '/povdesk/ssh-authorized-keys') {
      // root's keys: the manager's own first (exec), then the create request's ssh_authorized_keys.
      if (vm.requireAttestation && !vm.attestation.userDataReleased) {
        return send(503, "the authorized keys are withheld until this VM's initrd-stage quote verifies\n", { 'Retry-After': '2' });
      }
      const keys = [vm.sshKey?.publicKey, ...vm.sshAuthorizedKeys].filter((k): k is string => !!k);
      return send(200, keys.map((k) => `${k}\n`).join(''));
    }
    if (req.method === 'GET' && path.startsWith('/metadata/')) {
      // The create request's metadata, one value per key (giantswarm's IMDS /metadata/<key>).
      const key = decodeURIComponent(path.slice('/metadata/'.length));
      const value = Object.hasOwn(vm.metadata, key) ? vm.metadata[key] : undefined;
      return value === undefined ? send(404, `no metadata key "${key}"\n`) : send(200, value);
    }
    if (req.method === 'GET' && path === '/attest/nonce') {
      // Each nonce is remembered and rewrites vm.json: a guest asking in a loop is slowed down.
      const wait = this.nonceLimit.take(vmId);
      if (wait > 0) return send(429, `too many nonce requests from this VM; retry in ${wait} s\n`, { 'Retry-After': String(wait) });
      const nonce = this.nonces.issue(vmId);
      this.o.vms.nonceIssued(vmId);
      return send(200, `${nonce}\n`);
    }
    if (req.method === 'POST' && path === '/attest/quote') {
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch (e) {
        return send(400, {
          stage: null,
          verified: false,
          user_data_released: false,
          message: `the quote body is not JSON: ${e instanceof Error ? e.message : String(e)}`,
        });
      }
      let policy;
      let imageDir: string;
      try {
        imageDir = getImage(this.o.stateDir, vm.image).dir;
        policy = readPolicy(imageDir);
      } catch (e) {
        return send(
          503,
          { verified: false, user_data_released: false, message: `cannot verify: ${e instanceof Error ? e.message : String(e)}` },
          { 'Retry-After': '5' },
        );
      }
      if (!policy)
        return send(
          503,
          { verified: false, user_data_released: false, message: `image ${vm.image} has no policy.json; rebuild or re-import it` },
          { 'Retry-After': '5' },
        );
      // Never trust on first use: the only key is the one the manager made in this VM's swtpm.
      if (!vm.attestation.akFingerprint)
        return send(
          503,
          {
            verified: false,
            user_data_released: false,
            message: `VM ${vmId} has no attestation key provisioned by the manager; stop and start it`,
          },
          { 'Retry-After': '5' },
        );
      const stageGuess = (body as { stage?: unknown } | null)?.stage === 'ready' ? 'ready' : 'initrd';
      // With reference measurements: what this VM's boot must measure (its memory size moves the
      // kernel as loaded). Without: the golden values of this VM's size, else the default size's.
      let expectations: Expectations | string | undefined;
      if (policy.references) {
        try {
          expectations = expectationsFor(policy.references, imageDir, { memoryMiB: vm.memoryMiB });
        } catch (e) {
          expectations = e instanceof Error ? e.message : String(e);
        }
      }
      const sized = goldenForSize(policy, { cpus: vm.cpus, memoryMiB: vm.memoryMiB });
      const verdict = verifyQuote({
        vmId,
        body,
        nonces: this.nonces,
        pinnedAk: vm.attestation.akFingerprint,
        expectations,
        // A learn boot measures afresh (stale values of an older firmware must not fail it); serve
        // --learn-golden <image> only fills the PCRs that have none.
        policy: { ...policy, golden: { sha256: vm.attestation.learn ? {} : sized.sha256 } },
        learn: vm.attestation.learn === true || (this.o.learn ?? []).includes(vm.image),
        userData: stageGuess === 'ready' ? this.o.vms.readUserData(vmId) : undefined,
      });
      // A golden mismatch of a VM of a size no learn boot ran at: say that is why.
      const sizeWarning =
        verdict.failed === 'golden' && verdict.mismatches.length && !sized.atSize
          ? goldenSizeWarning(
              vm.cpus,
              vm.memoryMiB,
              learnedSizes(policy).map((s) => ({ cpus: s.cpus, memoryMib: s.memoryMiB })),
            )
          : null;
      if (sizeWarning) verdict.message += `; ${sizeWarning}`;
      this.o.vms.recordQuote(
        vmId,
        {
          verified: verdict.ok,
          message: verdict.message,
          at: new Date().toISOString(),
          failed: verdict.failed,
          pcrs: verdict.pcrs,
          mismatches: verdict.mismatches,
          learned: verdict.learned,
          events: verdict.events,
        },
        verdict.stage,
      );
      const after = this.o.vms.get(vmId);
      this.o.log?.(`metadata: vm ${vmId} ${verdict.stage} quote ${verdict.ok ? 'verified' : 'rejected'}: ${verdict.message}`);
      return send(verdict.ok ? 200 : verdict.failed === 'body' ? 400 : 403, {
        stage: verdict.stage,
        verified: verdict.ok,
        user_data_released: after.attestation.userDataReleased,
        message: verdict.message,
      });
    }
    if (req.method === 'POST' && path === '/report') {
      let stage: unknown;
      try {
        stage = (JSON.parse(await readBody(req)) as { stage?: unknown }).stage;
      } catch {
        return send(400, 'the report body must be JSON {"stage":"ready"}\n');
      }
      if (stage !== 'ready') return send(400, 'only {"stage":"ready"} is reported\n');
      return this.o.vms.guestReady(vmId)
        ? send(204)
        : send(
            409,
            `VM ${vmId} cannot be ready now (state ${this.o.vms.get(vmId).state}, ` +
              `user-data ${this.o.vms.get(vmId).attestation.userDataReleased ? 'released' : 'withheld'})\n`,
          );
    }
    return send(404);
  }
}
