import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, describe, expect, it } from 'vitest';
import { ed25519FromSeed, generateEd25519 } from '../../main/services/ssh/keygen';
import { needs } from '../support/system';

const skip = needs(['ssh-keygen']);
const dir = mkdtempSync(join(tmpdir(), 'povdesk-keygen-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What OpenSSH itself derives from the private key file: `ssh-keygen -y -f`. */
function opensshPublic(privateKey: string): string {
  const f = join(dir, 'key');
  writeFileSync(f, privateKey);
  chmodSync(f, 0o600);
  return execFileSync('ssh-keygen', ['-y', '-f', f], { encoding: 'utf8' }).trim();
}

/** A seed whose public key (or, with `seedZero`, the seed itself) begins with a zero byte. */
function zeroLeading(which: 'public' | 'seed'): Buffer {
  for (;;) {
    const seed = randomBytes(32);
    if (which === 'seed') {
      seed[0] = 0;
      return seed;
    }
    const line = ed25519FromSeed(seed, 'x').public;
    const blob = Buffer.from(line.split(' ')[1]!, 'base64');
    if (blob[4 + 11 + 4] === 0) return seed;
  }
}

const noComment = (line: string) => line.split(' ').slice(0, 2).join(' ');

describe.skipIf(skip)('Ed25519 key generation', () => {
  it('keys whose public key or seed starts with a zero byte load in ssh2 and in OpenSSH, and agree', () => {
    for (const which of ['public', 'seed'] as const) {
      const pair = ed25519FromSeed(zeroLeading(which), 'povdesk-test');
      const parsed = ssh2.utils.parseKey(pair.private);
      expect(parsed instanceof Error ? parsed.message : parsed.type).toBe('ssh-ed25519');
      expect(ssh2.utils.parseKey(pair.public) instanceof Error).toBe(false);
      expect(noComment(opensshPublic(pair.private))).toBe(noComment(pair.public));
      expect(pair.public.endsWith(' povdesk-test')).toBe(true);
    }
  });

  it('2,000 generated keys all parse, each private key matching its public line', () => {
    for (let i = 0; i < 2000; i++) {
      const pair = generateEd25519('c');
      const priv = ssh2.utils.parseKey(pair.private);
      if (priv instanceof Error) throw new Error(`key ${i} does not parse: ${priv.message}\n${pair.private}`);
      expect(Buffer.from(priv.getPublicSSH()).toString('base64')).toBe(pair.public.split(' ')[1]);
    }
    for (let i = 0; i < 5; i++) {
      const pair = generateEd25519('c');
      expect(noComment(opensshPublic(pair.private))).toBe(noComment(pair.public));
    }
  });

  it("control: ssh2 1.17's own generator makes keys that do not load (why keygen.ts exists)", () => {
    let bad = 0;
    for (let i = 0; i < 5000 && bad === 0; i++) {
      const pair = ssh2.utils.generateKeyPairSync('ed25519');
      if (ssh2.utils.parseKey(pair.private) instanceof Error || ssh2.utils.parseKey(pair.public) instanceof Error) bad++;
    }
    expect(bad).toBeGreaterThan(0);
  });
});
