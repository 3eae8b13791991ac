/**
 * A local VM's SSH host key: made once by the manager (dropbearkey) in the VM's
 * dir, handed to the guest only over the metadata service and only once its initrd quote verified
 * (the same gate as user-data), so the key stays the same across boots and a server presenting it
 * on the VM's SSH port is the attested guest. The app pre-trusts it; any other key is refused.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SshHostKey {
  /** `ssh-ed25519 <base64 blob>` (the OpenSSH public key line, no comment) */
  publicKey: string;
  /** sha256 of the blob as OpenSSH prints it */
  fingerprint: string;
}

export const SSH_HOST_KEY_FILE = 'ssh_host_ed25519_key';

export function sshHostKeyFile(vmDir: string): string {
  return join(vmDir, SSH_HOST_KEY_FILE);
}

/** Makes the key (dropbear format, mode 600) unless the VM has one; answers its public half. */
export async function ensureSshHostKey(vmDir: string): Promise<SshHostKey> {
  const file = sshHostKeyFile(vmDir);
  try {
    if (!existsSync(file)) await run('dropbearkey', ['-t', 'ed25519', '-f', file], { timeout: 30_000 });
    const { stdout } = await run('dropbearkey', ['-y', '-f', file], { timeout: 30_000 });
    const line = stdout.split('\n').find((l) => l.startsWith('ssh-ed25519 '));
    const fp = stdout.split('\n').find((l) => l.startsWith('Fingerprint: '));
    if (!line || !fp) throw new Error(`dropbearkey -y printed no ed25519 key: ${stdout.slice(0, 200)}`);
    const [type, blob] = line.split(' ');
    return { publicKey: `${type} ${blob}`, fingerprint: fp.slice('Fingerprint: '.length).trim() };
  } catch (e) {
    const err = (e as { stderr?: string }).stderr?.trim() || (e instanceof Error ? e.message : String(e));
    throw new Error(`could not make the VM's SSH host key with dropbearkey (apt-get install dropbear-bin): ${err}`, { cause: e });
  }
}

/** The private key for the guest, base64 (busybox `base64 -d` turns it back). Null when the VM has none. */
export function sshHostKeyForGuest(vmDir: string): string | null {
  const file = sshHostKeyFile(vmDir);
  return existsSync(file) ? readFileSync(file).toString('base64') : null;
}
