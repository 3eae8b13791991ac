/**
 * The VM's attestation key, made by the manager inside the VM's own swtpm before the guest ever
 * runs (docs/attestation.md, "Whose key"). The guest only uses the key persisted at AK_HANDLE; the
 * manager pins the public key it read from the TPM itself, so a quote signed by any other key
 * (e.g. a software key a tampered initrd made up) is refused.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dyingWithParent } from '../../lib/procs';
import { sleep } from '../../lib/sleep';
import { parsePublic } from './tpm';

const run = promisify(execFile);

/** Persistent handle of the AK in every VM's swtpm (guest-quote.sh reads ATTEST_AK_HANDLE, default the same). */
export const AK_HANDLE = '0x81010002';

export interface ProvisionedAk {
  /** TPM2B_PUBLIC bytes as `tpm2_readpublic -f tss` writes them (what the guest sends as ak_pub) */
  pub: Buffer;
  /** sha256 of the TPMT_PUBLIC: what the verifier compares (QuoteVerdict.akFingerprint) */
  fingerprint: string;
}

export function akFingerprintOf(pub: Buffer): string {
  return createHash('sha256').update(parsePublic(pub).raw).digest('hex');
}

/**
 * Creates an ECC P-256 restricted signing AK under the ECC EK on the TPM behind `tcti` and
 * persists it at AK_HANDLE, replacing whatever was there (a key a guest made is never trusted).
 */
export async function provisionAk(tcti: string): Promise<ProvisionedAk> {
  const work = mkdtempSync(join(tmpdir(), 'povdesk-ak-'));
  const env = { ...process.env, TPM2TOOLS_TCTI: tcti };
  const f = (n: string) => join(work, n);
  const tool = async (what: string, args: string[]) => {
    try {
      await run(what, args, { env, timeout: 30_000 });
    } catch (e) {
      const err = String((e as { stderr?: string }).stderr ?? e)
        .trim()
        .split('\n')
        .slice(-3)
        .join(' ');
      throw new Error(`${what} failed while provisioning the VM's attestation key: ${err}`, { cause: e });
    }
  };
  try {
    try {
      await run('tpm2_readpublic', ['-c', AK_HANDLE], { env, timeout: 30_000 });
      await tool('tpm2_evictcontrol', ['-C', 'o', '-c', AK_HANDLE]);
    } catch (e) {
      if ((e as Error).message.includes('provisioning')) throw e; // the evict failed; a missing handle is fine
    }
    await tool('tpm2_createek', ['-c', f('ek.ctx'), '-G', 'ecc', '-u', f('ek.pub')]);
    await tool('tpm2_createak', [
      '-C',
      f('ek.ctx'),
      '-c',
      f('ak.ctx'),
      '-G',
      'ecc',
      '-g',
      'sha256',
      '-s',
      'ecdsa',
      '-u',
      f('ak.pub'),
      '-n',
      f('ak.name'),
    ]);
    await tool('tpm2_flushcontext', ['-t']);
    await tool('tpm2_evictcontrol', ['-C', 'o', '-c', f('ak.ctx'), AK_HANDLE]);
    await tool('tpm2_flushcontext', ['-t']);
    await tool('tpm2_readpublic', ['-c', AK_HANDLE, '-f', 'tss', '-o', f('ak.pub')]);
    const pub = readFileSync(f('ak.pub'));
    return { pub, fingerprint: akFingerprintOf(pub) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(path);
    c.once('connect', () => (c.destroy(), resolve(true)));
    c.once('error', () => (c.destroy(), resolve(false)));
  });
}

/**
 * Runs `fn` against a swtpm on `stateDir`, then stops it; the state it wrote stays for the VM's own
 * swtpm. The swtpm listens on a unix socket (and its control socket beside it) in a fresh 0700
 * directory: no other local user can reach the TPM while the AK is made, and nothing but the swtpm
 * we started can be listening there (a loopback TCP port could be taken, or answered, by anyone).
 */
export async function withSwtpm<T>(stateDir: string, fn: (tcti: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-swtpm-'));
  chmodSync(dir, 0o700);
  const sock = join(dir, 'tpm.sock');
  const ctrl = `${sock}.ctrl`; // where tpm2-tss's swtpm TCTI looks for the control channel of path=<sock>
  // It dies with the manager: killed mid-provisioning, nothing else would ever stop it.
  const child = spawn(
    ...dyingWithParent('swtpm', [
      'socket',
      '--tpm2',
      '--tpmstate',
      `dir=${stateDir}`,
      '--server',
      `type=unixio,path=${sock}`,
      '--ctrl',
      `type=unixio,path=${ctrl}`,
      '--flags',
      'startup-clear,not-need-init',
    ]),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    const end = Date.now() + 5000;
    while (!(await answers(sock)) || !(await answers(ctrl))) {
      if (child.exitCode !== null) throw new Error(`swtpm exited (${child.exitCode}) before provisioning: ${err.trim()}`);
      if (Date.now() > end) throw new Error(`swtpm did not listen on ${sock} within 5 s: ${err.trim()}`);
      await sleep(20);
    }
    return await fn(`swtpm:path=${sock}`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Provisions the AK in a VM's swtpm state dir (no swtpm of that VM may be running). */
export function provisionVmAk(tpmStateDir: string): Promise<ProvisionedAk> {
  return withSwtpm(tpmStateDir, provisionAk);
}
