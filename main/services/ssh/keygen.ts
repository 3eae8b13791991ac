import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';

/**
 * A new Ed25519 key pair as OpenSSH writes it: the private key in the openssh-key-v1 format
 * (unencrypted, as `ssh-keygen -N ''` would) and the authorized_keys line.
 *
 * Not ssh2's utils.generateKeyPairSync: ssh2 1.17 strips leading zero bytes from the raw public key,
 * so about one key in 256 comes out 31 bytes long and neither ssh2 nor OpenSSH can load it
 * (mscdex/ssh2 issues 1390 and 1513, both open).
 */
export function generateEd25519(comment: string): { private: string; public: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  return ed25519FromSeed(Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url'), comment);
}

/** PKCS#8 DER of an Ed25519 private key is this prefix followed by the 32-byte seed (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The same, from a given 32-byte seed (tests pick seeds whose keys start with zero bytes). */
export function ed25519FromSeed(seed: Buffer, comment: string): { private: string; public: string } {
  if (seed.length !== 32) throw new Error(`an Ed25519 seed is 32 bytes, not ${seed.length}`);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const pub = Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x!, 'base64url');
  const blob = Buffer.concat([str('ssh-ed25519'), str(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, str('ssh-ed25519'), str(pub), str(Buffer.concat([seed, pub])), str(comment)]);
  // Padded to the cipher block size ("none": 8) with the bytes 1, 2, 3, …
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([Buffer.from('openssh-key-v1\0'), str('none'), str('none'), str(''), u32(1), str(blob), str(secret)]);
  const lines = body.toString('base64').match(/.{1,70}/g)!;
  return {
    private: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`,
    public: `ssh-ed25519 ${blob.toString('base64')} ${comment}`,
  };
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function str(v: string | Buffer): Buffer {
  const b = typeof v === 'string' ? Buffer.from(v) : v;
  return Buffer.concat([u32(b.length), b]);
}
