import { createHash } from 'node:crypto';
import { lazyRequire } from '../lazy';

const ssh2 = lazyRequire<typeof import('ssh2')>('ssh2');

/** `SHA256:<base64 without padding>` of the raw public key blob, exactly as `ssh-keygen -l` prints it. */
export function sha256Fingerprint(keyBlob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

/** The key type named inside an SSH public key blob (first length-prefixed string). */
export function keyTypeOf(keyBlob: Buffer): string {
  const parsed = ssh2().utils.parseKey(keyBlob);
  if (!(parsed instanceof Error)) {
    const one = Array.isArray(parsed) ? parsed[0] : parsed;
    if (one && typeof one.type === 'string') return one.type;
  }
  if (keyBlob.length >= 4) {
    const len = keyBlob.readUInt32BE(0);
    if (len > 0 && len < 64 && keyBlob.length >= 4 + len) return keyBlob.subarray(4, 4 + len).toString('latin1');
  }
  return 'unknown';
}
