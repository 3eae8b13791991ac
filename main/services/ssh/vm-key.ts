import { lstatSync, readFileSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { publicKeyLine } from './profiles';

/** An ed25519 key file is ~400 bytes; anything much larger is not the manager's key. */
const MAX_KEY_FILE = 16 * 1024;

/**
 * Reads the vm-manager's private key for a VM (main/services/vm/local-ssh.ts says where) into memory,
 * for one terminal session: a regular file (not a link), only its owner may read it, and it holds
 * the private half of `publicKey`, the key the manager lists first in root's authorized_keys.
 * Anything else is refused naming the file, never its contents.
 */
export function readManagerKey(file: string, publicKey: string, vm: string): string {
  const refuse = (why: string) =>
    new AppError(
      'unavailable',
      `cannot sign in to ${vm} with the vm-manager's key: ${file} ${why}; stop and start the VM so the manager checks its key`,
    );
  let st;
  try {
    st = lstatSync(file);
  } catch (e) {
    throw refuse(`cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (!st.isFile()) throw refuse('is not a regular file');
  if ((st.mode & 0o077) !== 0) throw refuse(`may be read by others (mode ${(st.mode & 0o777).toString(8)}; the manager makes it 600)`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw refuse(`belongs to another user (uid ${st.uid})`);
  if (st.size > MAX_KEY_FILE) throw refuse(`is ${st.size} bytes, not an SSH key`);
  const privateKey = readFileSync(file, 'utf8');
  let line: string;
  try {
    line = publicKeyLine(privateKey, undefined, '');
  } catch {
    throw refuse('is not an unencrypted OpenSSH private key');
  }
  if (line.trim() !== publicKey.trim()) throw refuse('is not the key the vm-manager lists for the VM (its public half differs)');
  return privateKey;
}
