/** Shared pieces of the vm-manager suites: one built test image reused via a cache dir, state dirs, process checks. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GUEST_QUOTE_SCRIPT } from '../../main/vm-manager/attest/index';
import { findOvmf } from '../../main/vm-manager/host';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { buildTestImage, findKernel } from '../../main/vm-manager/test-image';
import { needs } from '../support/system';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = join(here, '..', '..');
export const CACHE = join(repo, 'test', 'fixtures', 'generated', 'vm-manager');
export const SYSTEM = ['qemu-system-x86_64', 'qemu-img', 'swtpm', 'tpm2_quote', '/bin/busybox', '/usr/share/OVMF/OVMF_CODE_4M.fd'];

export function vmSkip(): string | null {
  const r = needs(SYSTEM);
  if (r) return r;
  try {
    findKernel();
  } catch (e) {
    if (process.env.CI === 'true') throw e;
    return String(e);
  }
  return null;
}

function inputsHash(): string {
  const h = createHash('sha256');
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'guest', 'init.sh')));
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'test-image.ts')));
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'images.ts')));
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'cpio.ts')));
  if (existsSync(GUEST_QUOTE_SCRIPT)) h.update(readFileSync(GUEST_QUOTE_SCRIPT));
  // the reference measurements in its policy.json: the code that makes them and the firmware they describe
  for (const f of ['image-references.ts', 'attest/references.ts', 'attest/firmware.ts'])
    h.update(readFileSync(join(repo, 'main', 'vm-manager', f)));
  const fw = findOvmf();
  if (fw) for (const f of [fw.code, fw.vars]) h.update(`${f} ${statSync(f).size} ${statSync(f).mtimeMs}`);
  h.update(findKernel().kernel);
  return h.digest('hex');
}

/** The cached test image (built once per input change; golden values learned later are kept with it). */
export function cachedImageDir(): string {
  // One folder per inputs hash, made aside and renamed into place: the two lanes of `npm test`
  // (docs/decisions/tests.md, "Two lanes") may both want it at once, and neither may see half an image
  // or have it removed under it.
  const want = inputsHash();
  const ready = join(CACHE, want.slice(0, 16));
  const dir = join(ready, 'images', TEST_IMAGE);
  if (existsSync(join(dir, 'image.json'))) return dir;
  mkdirSync(CACHE, { recursive: true });
  const aside = mkdtempSync(join(CACHE, 'building-'));
  try {
    buildTestImage(aside, { ovmfCode: findOvmf()?.code ?? null });
    renameSync(aside, ready);
  } catch (e) {
    rmSync(aside, { recursive: true, force: true });
    // another process made the same folder first: theirs is as good
    if (!existsSync(join(dir, 'image.json'))) throw e;
  }
  // images of older inputs go, unless another process is using them right now (best effort)
  for (const old of readdirSync(CACHE))
    if (old !== want.slice(0, 16) && !old.startsWith('building-')) rmSync(join(CACHE, old), { recursive: true, force: true });
  return dir;
}

/** A copy of the state dir's test image under another name (its image.json renamed with it); answers its folder. */
export function copyTestImage(state: string, name: string): string {
  const dir = join(state, 'images', name);
  cpSync(join(state, 'images', TEST_IMAGE), dir, { recursive: true });
  const info = JSON.parse(readFileSync(join(dir, 'image.json'), 'utf8')) as object;
  writeFileSync(join(dir, 'image.json'), JSON.stringify({ ...info, name }));
  return dir;
}

/** A fresh state dir with the cached test image copied in. */
export function stateWithImage(prefix = 'vmm-'): string {
  const src = cachedImageDir();
  const state = mkdtempSync(join(tmpdir(), prefix));
  cpSync(src, join(state, 'images', TEST_IMAGE), { recursive: true });
  return state;
}

export { pidsWith } from '../support/manager';

/**
 * A raw disk of `bytes` (sparse) with an MBR boot signature, and `dataMib` MiB of non-zero data
 * spread over it (for imports that must read and write something).
 */
export function rawDisk(file: string, bytes: number, dataMib = 0): void {
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, Buffer.from([0x55, 0xaa]), 0, 2, 510);
    const chunk = Buffer.alloc(1024 * 1024, 0xa5);
    const stride = Math.floor(bytes / chunk.length / (dataMib + 1));
    for (let i = 0; i < dataMib; i++) writeSync(fd, chunk, 0, chunk.length, (1 + i * stride) * chunk.length);
    writeSync(fd, Buffer.from([0]), 0, 1, bytes - 1);
  } finally {
    closeSync(fd);
  }
}

/**
 * `vm-manager serve <args>` as its own process, as the app runs it, with its API token in
 * POVDESK_VMM_TOKEN (not on its command line); resolves once it printed its endpoint.
 */
export async function serveProcess(args: string[], token: string): Promise<{ child: ChildProcess; url: string; err: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repo, 'main', 'vm-manager', 'main.ts'), 'serve', ...args], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, POVDESK_VMM_TOKEN: token },
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the manager exited with ${code}: ${err}`)));
  });
  return { child, url: (JSON.parse(line) as { url: string }).url, err: () => err };
}

export async function until<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = 60_000,
  step = 200,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, step));
  }
}

type VmAnswer = import('../../main/vm-manager/views').VmView;
type HostAnswer = ReturnType<typeof import('../../main/vm-manager/views').hostView>;
type ImageAnswer = ReturnType<typeof import('../../main/vm-manager/views').imageView>;
type AttestationAnswer = import('../../main/vm-api/schemas').Attestation & {
  povdesk: ReturnType<typeof import('../../main/vm-manager/views').attestationView>;
};

/** An error answer of the daemon: its status and the document's {"error":{"code","message"}}. */
export class ApiAnswerError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The suites' own small client of the daemon's REST API (over TCP or a unix socket), so they test
 * the daemon and not the app's client: bodies as the document spells them, answers as JSON.
 */
export class TestClient {
  constructor(
    private readonly base: string,
    private readonly token: string,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { request } = await import('node:http');
    const unix = this.base.startsWith('unix:') ? this.base.slice(5) : null;
    const u = unix ? null : new URL(this.base);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((resolve, reject) => {
      const req = request(
        {
          ...(unix ? { socketPath: unix } : { hostname: u?.hostname, port: u?.port }),
          path: `/api/v1${path}`,
          method,
          headers: {
            Authorization: `Bearer ${this.token}`,
            ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
          },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => {
            const text = Buffer.concat(parts).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status === 204) return resolve(undefined as T);
            const json = text ? (JSON.parse(text) as { error?: { code: string; message: string } }) : undefined;
            if (status >= 200 && status < 300) return resolve(json as T);
            reject(new ApiAnswerError(status, json?.error?.code ?? 'none', json?.error?.message ?? text));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  host = () => this.call<HostAnswer>('GET', '/host');
  images = () => this.call<ImageAnswer[]>('GET', '/images');
  importImage = (path: string, name?: string) => this.call<{ name: string }>('POST', '/images', name ? { path, name } : { path });
  deleteImage = (name: string) => this.call<void>('DELETE', `/images/${encodeURIComponent(name)}`);
  list = () => this.call<VmAnswer[]>('GET', '/vms');
  get = (id: string) => this.call<VmAnswer>('GET', `/vms/${id}`);
  create = (body: import('../../main/vm-api/schemas').CreateVmRequest) => this.call<VmAnswer>('POST', '/vms', body);
  start = (id: string) => this.call<VmAnswer>('POST', `/vms/${id}/start`);
  stop = (id: string) => this.call<VmAnswer>('POST', `/vms/${id}/stop`);
  reboot = (id: string) => this.call<VmAnswer>('POST', `/vms/${id}/reboot`);
  delete = (id: string) => this.call<void>('DELETE', `/vms/${id}`);
  console = (id: string, lines = 100) =>
    this.call<{ id: string; lines: number; console: string }>('GET', `/vms/${id}/console?lines=${lines}`);
  attestation = (id: string) => this.call<AttestationAnswer>('GET', `/vms/${id}/attestation`);
  exec = (id: string, command: string[]) =>
    this.call<{ stdout: string; stderr: string; exitCode: number }>('POST', `/vms/${id}/exec`, { command });
  forward = (id: string, port: number) => this.call<{ id: string; port: number; address: string }>('POST', `/vms/${id}/forward`, { port });
}

/** GET `path` from a manager's metadata service as VM `id` would: the guest proxy's preamble line, then HTTP. */
export function metadataGet(sock: string, id: string, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const c = connect(sock);
    let out = '';
    c.on('connect', () => c.write(`POVDESK-VM ${id}\nGET ${path} HTTP/1.0\r\nHost: 169.254.169.254\r\n\r\n`));
    c.on('data', (d) => (out += String(d)));
    c.on('end', () => resolve({ status: Number(out.split(' ')[1]), text: out.slice(out.indexOf('\r\n\r\n') + 4) }));
    c.on('error', reject);
  });
}
