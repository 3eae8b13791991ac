/**
 * Real parts for the attestation tests and bench: a swtpm on a unix socket, a PATH holding only busybox
 * applets and tpm2-tools, a node:http metadata stub backed by a NonceStore, and tpm2_checkquote.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { NonceStore } from '../../../main/vm-manager/attest/nonce';
import { provisionAk, type ProvisionedAk } from '../../../main/vm-manager/attest/provision';
import { verifyQuote, type QuoteVerdict, type VerifyRequest } from '../../../main/vm-manager/attest/verify';
import type { ImagePolicy } from '../../../main/vm-manager/attest/policy';

const run = promisify(execFile);

export const SYSTEM_NEEDS = [
  'busybox',
  'swtpm',
  'tpm2_createek',
  'tpm2_createak',
  'tpm2_quote',
  'tpm2_checkquote',
  'tpm2_pcrextend',
  'tpm2_evictcontrol',
  'tpm2_flushcontext',
  'tpm2_readpublic',
];

export const SCRIPT = fileURLToPath(new URL('../../../main/vm-manager/attest/guest-quote.sh', import.meta.url));

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `povdesk-${prefix}-`));
}

function waitForSocket(path: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 5000;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`swtpm exited with ${child.exitCode}: ${stderr()}`));
      const sock = connect(path);
      sock.once('connect', () => {
        sock.destroy();
        resolve();
      });
      sock.once('error', () => {
        sock.destroy();
        if (Date.now() > deadline) reject(new Error(`swtpm did not listen on ${path} within 5 s: ${stderr()}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export interface Swtpm {
  tcti: string;
  dir: string;
  /** the AK provisioned at 0x81010002 the way the vm-manager does it before a VM's first boot */
  ak: ProvisionedAk;
  stop(): Promise<void>;
}

/**
 * Starts a fresh swtpm (TPM 2.0, state and socket in its own dir) with the AK provisioned as the
 * vm-manager provisions a VM's (guest-quote.sh only uses it); stop() kills it by pid.
 */
export async function startSwtpm(root: string, name: string, opts: { provision?: boolean } = {}): Promise<Swtpm> {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  // A unix socket (and its control socket beside it, where tpm2-tss's swtpm TCTI looks) in the
  // test's own dir, as the manager's provisioning does (attest/provision.ts).
  const sock = join(dir, 'tpm.sock');
  const child = spawn(
    'swtpm',
    [
      'socket',
      '--tpm2',
      '--tpmstate',
      `dir=${dir}`,
      '--server',
      `type=unixio,path=${sock}`,
      '--ctrl',
      `type=unixio,path=${sock}.ctrl`,
      '--flags',
      'startup-clear,not-need-init',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await waitForSocket(sock, child, () => err);
  await waitForSocket(`${sock}.ctrl`, child, () => err);
  const tcti = `swtpm:path=${sock}`;
  return {
    tcti,
    dir,
    ak: opts.provision === false ? { pub: Buffer.alloc(0), fingerprint: '' } : await provisionAk(tcti),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

let busyboxFile: string | null = null;
async function busyboxPath(): Promise<string> {
  busyboxFile ??= (await run('sh', ['-c', 'command -v busybox'])).stdout.trim();
  return busyboxFile;
}

const APPLETS = [
  'sh',
  'mkdir',
  'rm',
  'cat',
  'head',
  'tail',
  'tr',
  'cut',
  'sed',
  'wc',
  'nc',
  'base64',
  'sha256sum',
  'cp',
  'printf',
  'echo',
  'timeout',
];
const TPM_TOOLS = [
  'tpm2_readpublic',
  'tpm2_createek',
  'tpm2_createak',
  'tpm2_evictcontrol',
  'tpm2_flushcontext',
  'tpm2_pcrextend',
  'tpm2_quote',
];

/**
 * A bin dir holding busybox applets and the tpm2 tools only, as in the guest initramfs: with
 * PATH set to it the script cannot reach GNU coreutils. Returns the dir.
 */
export async function guestPath(root: string): Promise<string> {
  const bin = join(root, 'guest-bin');
  mkdirSync(bin, { recursive: true });
  const busybox = await busyboxPath();
  for (const a of APPLETS) symlinkSync(busybox, join(bin, a));
  for (const t of TPM_TOOLS) symlinkSync(`/usr/bin/${t}`, join(bin, t));
  return bin;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs guest-quote.sh under `busybox sh` with the guest PATH. */
export function runGuestQuote(
  args: string[],
  env: { bin: string; tcti: string; stateDir: string; extra?: Record<string, string> },
): Promise<RunResult> {
  return busyboxPath().then(
    (busybox) =>
      new Promise((resolve, reject) => {
        const child = spawn(busybox, ['sh', SCRIPT, ...args], {
          env: { PATH: env.bin, TPM2TOOLS_TCTI: env.tcti, ATTEST_STATE_DIR: env.stateDir, ...env.extra },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.once('error', reject);
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
      }),
  );
}

export interface MetadataStub {
  port: number;
  nonces: NonceStore;
  /** Every quote body received, in order, with the verdict returned. */
  received: { body: unknown; verdict: QuoteVerdict }[];
  /** The VM the stub answers for, the pinned AK and the policy the stub verifies with. */
  state: {
    vmId: string;
    pinnedAk: string | null;
    policy: ImagePolicy;
    learn: boolean;
    userData?: string | null;
    expectations?: VerifyRequest['expectations'];
  };
  close(): Promise<void>;
}

/**
 * GET /attest/nonce and POST /attest/quote, shaped like the vm-manager's metadata service: 200
 * {stage, verified, message} when the quote verifies (pinning the AK on a verified initrd quote),
 * 400 for a malformed body, 403 when rejected.
 */
export async function startMetadataStub(state: MetadataStub['state']): Promise<MetadataStub> {
  const nonces = new NonceStore();
  const received: MetadataStub['received'] = [];
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/attest/nonce') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(nonces.issue(state.vmId));
      return;
    }
    if (req.method === 'POST' && req.url === '/attest/quote') {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 2 * 1024 * 1024) req.destroy();
        else chunks.push(c);
      });
      req.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = null;
        }
        const vreq: VerifyRequest = { vmId: state.vmId, body, nonces, policy: state.policy, pinnedAk: state.pinnedAk, learn: state.learn };
        if (state.userData !== undefined) vreq.userData = state.userData;
        if (state.expectations !== undefined) vreq.expectations = state.expectations;
        const verdict = verifyQuote(vreq);
        received.push({ body, verdict });
        if (verdict.ok && verdict.stage === 'initrd' && state.pinnedAk === null) state.pinnedAk = verdict.akFingerprint;
        const status = verdict.ok ? 200 : verdict.failed === 'body' ? 400 : 403;
        res
          .writeHead(status, { 'content-type': 'application/json' })
          .end(JSON.stringify({ stage: verdict.stage, verified: verdict.ok, message: verdict.message }));
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('metadata stub has no TCP address');
  return { port: addr.port, nonces, received, state, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * tpm2-tools' checkquote reads PCR values only in its "serialized" layout (tpm2_quote -F
 * serialized): host-endian C structs TPML_PCR_SELECTION (4 + 16×8 bytes), a u32 count of
 * TPML_DIGEST blocks, then each TPML_DIGEST (u32 count + 8 × TPM2B_DIGEST of 2 + 64 bytes).
 * The wire carries the plain values (-F values); this repacks the same bytes for checkquote.
 */
export function serializedPcrs(pcrList: number[], values: Buffer): Buffer {
  const sel = Buffer.alloc(4 + 16 * 8);
  sel.writeUInt32LE(1, 0);
  sel.writeUInt16LE(0x000b, 4);
  sel.writeUInt8(3, 6);
  for (const p of pcrList) sel[7 + (p >> 3)]! |= 1 << (p & 7);
  const blocks = Math.ceil(pcrList.length / 8);
  const out = [sel, Buffer.alloc(4)];
  out[1]!.writeUInt32LE(blocks, 0);
  for (let b = 0; b < blocks; b++) {
    const block = Buffer.alloc(4 + 8 * 66);
    const n = Math.min(8, pcrList.length - b * 8);
    block.writeUInt32LE(n, 0);
    for (let i = 0; i < n; i++) {
      const v = values.subarray((b * 8 + i) * 32, (b * 8 + i + 1) * 32);
      block.writeUInt16LE(32, 4 + i * 66);
      v.copy(block, 4 + i * 66 + 2);
    }
    out.push(block);
  }
  return Buffer.concat(out);
}

export interface WireBody {
  stage: 'initrd' | 'ready';
  nonce: string;
  pcr_list: string;
  ak_pub: string;
  quote: string;
  signature: string;
  pcrs: string;
  event_log?: string;
}

/** Writes a body's parts as files for tpm2_checkquote; returns its argv (without the program). */
export function checkquoteArgs(dir: string, body: WireBody, opts: { nonce?: string; akPub?: string } = {}): string[] {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  writeFileSync(f('ak.pub'), Buffer.from(opts.akPub ?? body.ak_pub, 'base64'));
  writeFileSync(f('quote.msg'), Buffer.from(body.quote, 'base64'));
  writeFileSync(f('quote.sig'), Buffer.from(body.signature, 'base64'));
  const list = body.pcr_list
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
  writeFileSync(f('quote.pcrs'), serializedPcrs(list, Buffer.from(body.pcrs, 'base64')));
  return [
    '-u',
    f('ak.pub'),
    '-m',
    f('quote.msg'),
    '-s',
    f('quote.sig'),
    '-f',
    f('quote.pcrs'),
    '-g',
    'sha256',
    '-q',
    opts.nonce ?? body.nonce,
  ];
}

/** Runs tpm2_checkquote on a body (optionally against another nonce or AK); true when it accepts. */
export async function checkquote(dir: string, body: WireBody, opts: { nonce?: string; akPub?: string } = {}): Promise<boolean> {
  try {
    await run('tpm2_checkquote', checkquoteArgs(dir, body, opts));
    return true;
  } catch {
    return false;
  }
}

/**
 * A quote made directly with tpm2_quote (host tools) for a given nonce, using the AK the script
 * persisted at 0x81010002: lets a test make several genuine quotes without the HTTP round trip.
 */
export async function quoteDirect(dir: string, tcti: string, stage: 'initrd' | 'ready', nonce: string, pcrList: string): Promise<WireBody> {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const env = { ...process.env, TPM2TOOLS_TCTI: tcti };
  await run('tpm2_readpublic', ['-c', '0x81010002', '-f', 'tss', '-o', f('ak.pub')], { env });
  await run(
    'tpm2_quote',
    [
      '-c',
      '0x81010002',
      '-l',
      `sha256:${pcrList}`,
      '-q',
      nonce,
      '-g',
      'sha256',
      '-m',
      f('q.msg'),
      '-s',
      f('q.sig'),
      '-o',
      f('q.pcrs'),
      '-F',
      'values',
    ],
    { env },
  );
  const b = (n: string) => readFileSync(f(n)).toString('base64');
  return { stage, nonce, pcr_list: pcrList, ak_pub: b('ak.pub'), quote: b('q.msg'), signature: b('q.sig'), pcrs: b('q.pcrs') };
}

export async function pcrExtend(tcti: string, pcr: number, hexDigest: string): Promise<void> {
  await run('tpm2_pcrextend', [`${pcr}:sha256=${hexDigest}`], { env: { ...process.env, TPM2TOOLS_TCTI: tcti } });
}

export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
