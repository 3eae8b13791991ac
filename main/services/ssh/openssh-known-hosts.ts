/**
 * OpenSSH's known_hosts files, read (never written) so a host the SE's own `ssh` already trusts is
 * not asked about again, and a key OpenSSH holds for it that differs is shown as a changed key.
 * Format (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT"): `[@marker] patterns keytype base64 [comment]`;
 * patterns are comma-separated, with `*` and `?` wildcards and `!` negation; a port other than 22
 * is written `[host]:port`; hashed names (`HashKnownHosts yes`, Debian's and Ubuntu's default) are
 * `|1|base64 salt|base64 HMAC-SHA1(salt, name)`. `@cert-authority` lines are skipped (POV Desk does
 * not check host certificates); `@revoked` keys are refused. The files are untrusted input: a line
 * that does not parse is skipped, and a file larger than 8 MB is not read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { normalHost } from './known-hosts';

export interface OpensshKey {
  file: string;
  line: number;
  revoked: boolean;
  keyType: string;
  keyBase64: string;
  /** When the file last changed (the key was there by then). */
  fileChangedAt: string;
}

const MAX_FILE_BYTES = 8 * 1024 * 1024;
const KEY_TYPE = /^(ssh-(rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The user's own files, as OpenSSH reads them by default (UserKnownHostsFile). */
export function defaultKnownHostsFiles(home = homedir()): string[] {
  return [join(home, '.ssh', 'known_hosts'), join(home, '.ssh', 'known_hosts2')];
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` on any other. */
export function lookupName(host: string, port: number): string {
  const h = normalHost(host);
  return port === 22 ? h : `[${h}]:${port}`;
}

/** `*` and `?` wildcards, case-insensitive as OpenSSH's match_pattern (file names: case-sensitive, as glob). */
export function wildcard(pattern: string, name: string, caseless = true): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    caseless ? 'i' : '',
  );
  return re.test(name);
}

function hashedMatch(entry: string, name: string): boolean {
  const [, kind, salt, hash] = entry.split('|');
  if (kind !== '1' || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64');
  const got = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

/** OpenSSH's pattern-list rule (known_hosts, ssh_config's Host): one pattern matches and no negated one does. */
export function patternsMatch(patterns: string[], name: string): boolean {
  let hit = false;
  for (const p of patterns) {
    if (!p) continue;
    if (p.startsWith('!')) {
      if (wildcard(p.slice(1), name)) return false;
    } else if (wildcard(p, name)) hit = true;
  }
  return hit;
}

/** Whether a line's host field names `name`: one pattern matches and no negated one does. */
export function hostsMatch(field: string, name: string): boolean {
  return field.startsWith('|') ? hashedMatch(field, name) : patternsMatch(field.split(','), name);
}

/** The keys a file holds for host:port, in file order. */
export function keysInText(text: string, file: string, host: string, port: number, fileChangedAt: string): OpensshKey[] {
  const name = lookupName(host, port);
  const out: OpensshKey[] = [];
  text.split('\n').forEach((raw, i) => {
    const fields = raw.trim().split(/\s+/);
    if (!fields[0] || fields[0].startsWith('#')) return;
    let revoked = false;
    if (fields[0].startsWith('@')) {
      if (fields[0] === '@revoked') revoked = true;
      else return; // @cert-authority, or a marker OpenSSH does not know
      fields.shift();
    }
    const [hosts, keyType, keyBase64] = fields;
    if (!hosts || !keyType || !keyBase64 || !KEY_TYPE.test(keyType) || !BASE64.test(keyBase64)) return;
    if (!hostsMatch(hosts, name)) return;
    out.push({ file, line: i + 1, revoked, keyType, keyBase64, fileChangedAt });
  });
  return out;
}

/** The keys OpenSSH's files hold for host:port; a missing or unreadable file holds none. */
export function opensshKeysFor(files: string[], host: string, port: number): OpensshKey[] {
  const out: OpensshKey[] = [];
  for (const file of files) {
    try {
      const st = statSync(file);
      if (!st.isFile() || st.size > MAX_FILE_BYTES) continue;
      out.push(...keysInText(readFileSync(file, 'utf8'), file, host, port, st.mtime.toISOString()));
    } catch {
      // no such file, or not readable: OpenSSH would skip it too
    }
  }
  return out;
}

export type OpensshVerdict =
  | { kind: 'none' }
  | { kind: 'match'; entry: OpensshKey }
  | { kind: 'revoked'; entry: OpensshKey }
  /** OpenSSH holds a different key of the same type for this host: as good as a changed key. */
  | { kind: 'changed'; entry: OpensshKey };

export function opensshVerdict(keys: OpensshKey[], presentedType: string, presentedBase64: string): OpensshVerdict {
  const revoked = keys.find((k) => k.revoked && k.keyBase64 === presentedBase64);
  if (revoked) return { kind: 'revoked', entry: revoked };
  const match = keys.find((k) => !k.revoked && k.keyBase64 === presentedBase64);
  if (match) return { kind: 'match', entry: match };
  const other = keys.find((k) => !k.revoked && k.keyType === presentedType);
  return other ? { kind: 'changed', entry: other } : { kind: 'none' };
}
