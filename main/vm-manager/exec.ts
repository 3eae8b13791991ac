/**
 * POST /vms/{id}/exec: a command as root in the guest over SSH, as giantswarm does it. The manager
 * signs in with its own per-VM key (made here with ssh-keygen; the public half is the record's
 * sshPublicKey and the first key in root's authorized_keys, served to the guest by the metadata
 * service) and trusts only the guest's manager-made host key (ssh-host-key.ts), through the VM's
 * forwarded SSH port on 127.0.0.1. OpenSSH's `ssh` client runs it: the packaged daemon is one file
 * and carries no SSH stack of its own. A non-zero exit is a result, never an error.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VmmError } from './errors';
import { findTool } from './finders';
import type { VmRecord } from './vm-record';

const run = promisify(execFile);

/** Output kept per stream; the rest is cut with a note (the document has no size for it). */
export const EXEC_MAX_OUTPUT = 4 * 1024 * 1024;

/** Makes the manager's key for this VM unless it has one; answers the OpenSSH public key line. */
export async function ensureManagerKey(keyFile: string, vmId: string): Promise<{ publicKey: string }> {
  try {
    if (!existsSync(keyFile))
      await run(findTool('ssh-keygen') ?? 'ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `vm-manager@${vmId}`, '-f', keyFile], {
        timeout: 30_000,
      });
    const pub = readFileSync(`${keyFile}.pub`, 'utf8').trim().split(' ');
    return { publicKey: `${pub[0]} ${pub[1]}` };
  } catch (e) {
    const err = (e as { stderr?: string }).stderr?.trim() || (e instanceof Error ? e.message : String(e));
    throw new Error(`could not make the manager's SSH key for VM ${vmId} with ssh-keygen (apt-get install openssh-client): ${err}`, {
      cause: e,
    });
  }
}

/** POSIX shell quoting of one argument (the guest's sshd runs the command line through /bin/sh). */
export function shQuote(word: string): string {
  return /^[A-Za-z0-9_/.:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Why exec cannot reach this VM now (409), or null. */
export function execBlocker(r: VmRecord): string | null {
  if (r.state !== 'ready' && r.state !== 'running') return `VM ${r.id} is ${r.state}; exec needs it ready (or running)`;
  if (!r.ports.ssh) return `VM ${r.id} has no forwarded SSH port (started by an older vm-manager); stop and start it`;
  if (!r.sshKey || !existsSync(r.paths.sshKey)) return `VM ${r.id} has no manager SSH key (made by an older vm-manager); stop and start it`;
  if (!r.sshHostKey) return `VM ${r.id} has no manager-made SSH host key, so its SSH server cannot be trusted; stop and start it`;
  return null;
}

export async function execInGuest(
  r: VmRecord,
  command: string[],
  timeoutMs = 600_000,
): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const blocker = execBlocker(r);
  if (blocker) throw new VmmError('conflict', blocker);
  return sshRun(r, command, timeoutMs);
}

/** The same over the VM's forwarded SSH port, whatever its state (the manager's own use: a resumed guest re-attests). */
export function sshRun(r: VmRecord, command: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const port = r.ports.ssh as number;
  const known = join(r.paths.dir, `exec_known_hosts.${randomBytes(6).toString('hex')}`);
  writeFileSync(known, `[127.0.0.1]:${port} ${r.sshHostKey?.publicKey}\n`, { mode: 0o600 });
  const args = [
    '-F',
    'none',
    '-i',
    r.paths.sshKey,
    '-p',
    String(port),
    '-l',
    'root',
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${known}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'ConnectTimeout=15',
    '-o',
    'LogLevel=ERROR',
    '-T',
    '127.0.0.1',
    '--',
    command.map(shQuote).join(' '),
  ];
  const ssh = findTool('ssh') ?? 'ssh';
  return new Promise((resolve, reject) => {
    const child = spawn(ssh, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    const take = (k: 'stdout' | 'stderr') => (d: Buffer) => {
      if (out[k].length < EXEC_MAX_OUTPUT) out[k] += d.toString('utf8');
    };
    child.stdout.on('data', take('stdout'));
    child.stderr.on('data', take('stderr'));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new VmmError('internal', `could not run ssh for exec in VM ${r.id}: ${e.message} (apt-get install openssh-client)`));
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      rmSync(known, { force: true });
      for (const k of ['stdout', 'stderr'] as const)
        if (out[k].length > EXEC_MAX_OUTPUT) out[k] = `${out[k].slice(0, EXEC_MAX_OUTPUT)}\n[cut at ${EXEC_MAX_OUTPUT} bytes]`;
      if (sig)
        return reject(
          new VmmError('timeout', `exec in VM ${r.id} did not finish within ${Math.round(timeoutMs / 1000)} s and was stopped`),
        );
      // 255 is ssh's own failure (or the command's 255): its message says which.
      if (
        code === 255 &&
        /^(ssh: |Host key verification failed|Permission denied|kex_exchange|Connection (closed|reset|refused)|.*port 22: )/m.test(
          out.stderr,
        )
      ) {
        return reject(new VmmError('conflict', `cannot reach VM ${r.id} over SSH for exec: ${out.stderr.trim().split('\n')[0]}`));
      }
      resolve({ stdout: out.stdout, stderr: out.stderr, exitCode: code ?? -1 });
    });
  });
}
