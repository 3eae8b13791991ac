import { randomUUID } from 'node:crypto';
import { lazyRequire } from '../lazy';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import { sshProfileSave, type SshProfile } from '../../../shared/contract/ssh';
import type { SecretStore } from '../secrets/store';
import type { Db } from '../store/db';
import { generateEd25519 } from './keygen';

const ssh2 = lazyRequire<typeof import('ssh2')>('ssh2');

export type ProfileInput = z.output<typeof sshProfileSave>;

/** Keychain account names; the service name is "povdesk". */
export const secretAccount = (id: string, kind: 'key' | 'passphrase' | 'password') => `ssh:profile:${id}:${kind}`;

export interface ProfileCredentials {
  privateKey?: string;
  passphrase?: string;
  password?: string;
  /** The profile signs in with the user's SSH agent (nothing of it is in the keychain). */
  agent?: true;
}

interface Row {
  id: string;
  name: string;
  host: string;
  port: number;
  username: string;
  auth_kind: 'key' | 'password' | 'agent';
  public_key: string | null;
  jump_json: string;
  keepalive_sec: number;
  auto_reconnect: number;
  agent_forward: number;
  created_at: string;
  updated_at: string;
}

const jumpRows = lazySchema(() =>
  z.array(z.object({ host: z.string(), port: z.number().int(), username: z.string(), profileId: z.string().nullable() }).strict()),
);

function toProfile(r: Row): SshProfile {
  const jump = jumpRows.safeParse(JSON.parse(r.jump_json));
  return {
    id: r.id,
    name: r.name,
    host: r.host,
    port: r.port,
    username: r.username,
    authKind: r.auth_kind,
    publicKey: r.public_key,
    jump: jump.success ? jump.data : [],
    keepaliveSec: r.keepalive_sec,
    autoReconnect: r.auto_reconnect === 1,
    agentForward: r.agent_forward === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Parses a private key (OpenSSH or PEM), decrypting with the passphrase, and returns its OpenSSH
 * public key line. Throws invalid_request with the parser's reason when the key or passphrase is wrong.
 */
export function publicKeyLine(privateKey: string, passphrase: string | undefined, comment: string): string {
  const parsed = ssh2().utils.parseKey(privateKey, passphrase);
  if (parsed instanceof Error) {
    const encrypted = /encrypted|passphrase/i.test(parsed.message);
    throw new AppError(
      'invalid_request',
      encrypted
        ? `the private key is encrypted and the passphrase ${passphrase ? 'is wrong' : 'is missing'}: ${parsed.message}`
        : `cannot read the private key (${parsed.message}); paste an OpenSSH or PEM private key`,
    );
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || !key.isPrivateKey()) throw new AppError('invalid_request', 'that is a public key; import the private key file');
  return `${key.type} ${key.getPublicSSH().toString('base64')} ${comment}`;
}

/** Saved connection profiles in SQLite; their private keys, passphrases and passwords in the keychain. */
export class Profiles {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretStore,
  ) {}

  list(): SshProfile[] {
    return (this.db.prepare('SELECT * FROM ssh_profiles ORDER BY name, id').all() as Row[]).map(toProfile);
  }

  get(id: string): SshProfile {
    const r = this.db.prepare('SELECT * FROM ssh_profiles WHERE id = ?').get(id) as Row | undefined;
    if (!r) throw new AppError('not_found', `no SSH profile ${JSON.stringify(id)}; it may have been deleted — pick another`);
    return toProfile(r);
  }

  async save(input: ProfileInput, now = new Date()): Promise<SshProfile> {
    const existing = input.id ? (this.db.prepare('SELECT * FROM ssh_profiles WHERE id = ?').get(input.id) as Row | undefined) : undefined;
    if (input.id && !existing && input.credentials.kind === 'keep') {
      throw new AppError(
        'not_found',
        `no SSH profile ${JSON.stringify(input.id)} to keep credentials of; choose generate, import or password`,
      );
    }
    const id = input.id ?? randomUUID();
    for (const hop of input.jump) {
      if (hop.profileId === id) throw new AppError('invalid_request', 'a jump host cannot use the profile it belongs to');
      if (hop.profileId) this.get(hop.profileId);
    }
    let authKind: 'key' | 'password' | 'agent' = existing?.auth_kind ?? 'key';
    let publicKey: string | null = existing?.public_key ?? null;
    const comment = `povdesk-${input.name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 40)}`;
    const writes: [string, string][] = [];
    const deletes: string[] = [];
    const c = input.credentials;
    if (c.kind === 'generate') {
      const pair = generateEd25519(comment);
      authKind = 'key';
      publicKey = pair.public.trim();
      writes.push([secretAccount(id, 'key'), pair.private]);
      deletes.push(secretAccount(id, 'passphrase'), secretAccount(id, 'password'));
    } else if (c.kind === 'import') {
      authKind = 'key';
      publicKey = publicKeyLine(c.privateKey, c.passphrase, comment);
      writes.push([secretAccount(id, 'key'), c.privateKey]);
      if (c.passphrase) writes.push([secretAccount(id, 'passphrase'), c.passphrase]);
      else deletes.push(secretAccount(id, 'passphrase'));
      deletes.push(secretAccount(id, 'password'));
    } else if (c.kind === 'password') {
      authKind = 'password';
      publicKey = null;
      writes.push([secretAccount(id, 'password'), c.password]);
      deletes.push(secretAccount(id, 'key'), secretAccount(id, 'passphrase'));
    } else if (c.kind === 'agent') {
      authKind = 'agent';
      publicKey = null;
      deletes.push(secretAccount(id, 'key'), secretAccount(id, 'passphrase'), secretAccount(id, 'password'));
    } else if (!existing) {
      throw new AppError('invalid_request', 'a new profile needs credentials: generate, import, password or the SSH agent');
    }
    // Secrets first: a profile row never points at credentials that failed to reach the keychain.
    for (const [account, value] of writes) await this.secrets.set(account, value);
    for (const account of deletes) await this.secrets.delete(account);
    const stamp = now.toISOString();
    const row: Row = {
      id,
      name: input.name,
      host: input.host.toLowerCase(),
      port: input.port,
      username: input.username,
      auth_kind: authKind,
      public_key: publicKey,
      jump_json: JSON.stringify(
        input.jump.map((h) => ({ host: h.host.toLowerCase(), port: h.port, username: h.username, profileId: h.profileId })),
      ),
      keepalive_sec: input.keepaliveSec,
      auto_reconnect: input.autoReconnect ? 1 : 0,
      agent_forward: 0,
      created_at: existing?.created_at ?? stamp,
      updated_at: stamp,
    };
    this.db
      .prepare(
        `INSERT INTO ssh_profiles (id, name, host, port, username, auth_kind, public_key, jump_json, keepalive_sec,
           auto_reconnect, agent_forward, created_at, updated_at)
         VALUES (@id, @name, @host, @port, @username, @auth_kind, @public_key, @jump_json, @keepalive_sec,
           @auto_reconnect, @agent_forward, @created_at, @updated_at)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, host = excluded.host, port = excluded.port,
           username = excluded.username, auth_kind = excluded.auth_kind, public_key = excluded.public_key,
           jump_json = excluded.jump_json, keepalive_sec = excluded.keepalive_sec,
           auto_reconnect = excluded.auto_reconnect, agent_forward = excluded.agent_forward, updated_at = excluded.updated_at`,
      )
      .run(row);
    return toProfile(row);
  }

  async delete(id: string): Promise<void> {
    this.get(id);
    const users = (this.db.prepare('SELECT name, jump_json FROM ssh_profiles WHERE id != ?').all(id) as Row[]).filter((r) =>
      r.jump_json.includes(JSON.stringify(id)),
    );
    if (users.length) {
      throw new AppError(
        'conflict',
        `profile is used as a jump host by ${users.map((u) => JSON.stringify(u.name)).join(', ')}; edit those first`,
      );
    }
    this.db.prepare('DELETE FROM ssh_profiles WHERE id = ?').run(id);
    for (const kind of ['key', 'passphrase', 'password'] as const) await this.secrets.delete(secretAccount(id, kind));
  }

  async credentials(id: string): Promise<ProfileCredentials> {
    const p = this.get(id);
    if (p.authKind === 'agent') return { agent: true };
    if (p.authKind === 'password') {
      const password = await this.secrets.get(secretAccount(id, 'password'));
      if (!password)
        throw new AppError(
          'not_found',
          `the password of profile ${JSON.stringify(p.name)} is not in the keychain; save the profile again with the password`,
        );
      return { password };
    }
    const privateKey = await this.secrets.get(secretAccount(id, 'key'));
    if (!privateKey)
      throw new AppError(
        'not_found',
        `the private key of profile ${JSON.stringify(p.name)} is not in the keychain; generate or import it again`,
      );
    const passphrase = (await this.secrets.get(secretAccount(id, 'passphrase'))) ?? undefined;
    return passphrase ? { privateKey, passphrase } : { privateKey };
  }
}
