import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sshMethods } from '../../shared/contract/ssh';
import { secretAccount } from '../../main/services/ssh/profiles';
import { makeEnv, type Env } from './harness';

const base = {
  host: 'Lab-Box.example',
  port: 2222,
  username: 'demo',
  jump: [],
  keepaliveSec: 15,
  autoReconnect: true,
  agentForward: false as const,
};

describe('ssh profiles and the contract', () => {
  let env: Env;
  afterEach(() => env?.dispose());

  it('a generated key lives in the keychain only; SQLite holds the public half', async () => {
    env = makeEnv();
    const p = await env.manager.profiles.save({ name: 'lab', ...base, credentials: { kind: 'generate' } });
    expect(p).toMatchObject({ host: 'lab-box.example', port: 2222, authKind: 'key', agentForward: false });
    const priv = await env.secrets.get(secretAccount(p.id, 'key'));
    expect(priv).toMatch(/BEGIN OPENSSH PRIVATE KEY/);
    env.db.pragma('wal_checkpoint(TRUNCATE)');
    const file = readFileSync(join(env.dir, 'povdesk.db')).toString('latin1');
    expect(file).toContain(p.publicKey!.split(' ')[1]!);
    const body = priv!.split('\n').slice(1, -2).join('');
    expect(file).not.toContain(body.slice(0, 40));
    expect(file).not.toContain('PRIVATE KEY');
  });

  it('switching to a password drops the key from the keychain; delete removes every secret', async () => {
    env = makeEnv();
    const p = await env.manager.profiles.save({ name: 'lab', ...base, credentials: { kind: 'generate' } });
    const p2 = await env.manager.profiles.save({ id: p.id, name: 'lab', ...base, credentials: { kind: 'password', password: 'pw-123' } });
    expect(p2).toMatchObject({ authKind: 'password', publicKey: null, createdAt: p.createdAt });
    expect(await env.secrets.get(secretAccount(p.id, 'key'))).toBeNull();
    expect(await env.manager.profiles.credentials(p.id)).toEqual({ password: 'pw-123' });
    const kept = await env.manager.profiles.save({ id: p.id, name: 'renamed', ...base, credentials: { kind: 'keep' } });
    expect(kept.name).toBe('renamed');
    expect(await env.manager.profiles.credentials(p.id)).toEqual({ password: 'pw-123' });
    await env.manager.profiles.delete(p.id);
    expect(await env.secrets.get(secretAccount(p.id, 'password'))).toBeNull();
    expect(() => env.manager.profiles.get(p.id)).toThrow(/no SSH profile/);
  });

  it('a profile used as a jump host cannot be deleted out from under another', async () => {
    env = makeEnv();
    const jump = await env.manager.profiles.save({ name: 'bastion', ...base, credentials: { kind: 'generate' } });
    await env.manager.profiles.save({
      name: 'inner',
      ...base,
      jump: [{ host: 'bastion', port: 22, username: 'j', profileId: jump.id }],
      credentials: { kind: 'generate' },
    });
    await expect(env.manager.profiles.delete(jump.id)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('opening a profile whose secret is missing from the keychain says so before connecting', async () => {
    env = makeEnv();
    const p = await env.manager.profiles.save({ name: 'lab', ...base, credentials: { kind: 'generate' } });
    await env.secrets.delete(secretAccount(p.id, 'key'));
    await expect(env.manager.open({ profileId: p.id, cols: 80, rows: 24 })).rejects.toThrow(/not in the keychain/);
    expect(env.manager.list()).toEqual([]);
  });

  it('contract: strict arguments, one of profileId/target, agent forwarding cannot be turned on', () => {
    const open = sshMethods['ssh.open'].args;
    expect(open.safeParse({ cols: 80, rows: 24 }).success).toBe(false);
    expect(open.safeParse({ profileId: 'a', cols: 80, rows: 24 }).success).toBe(true);
    expect(open.safeParse({ profileId: 'a', cols: 80, rows: 24, extra: 1 }).success).toBe(false);
    const t = { host: 'h', username: 'u', auth: { kind: 'password', password: 'p' } };
    expect(open.safeParse({ profileId: 'a', target: t, cols: 80, rows: 24 }).success).toBe(false);
    expect(open.safeParse({ target: t, cols: 80, rows: 24 }).success).toBe(true);
    expect(open.safeParse({ target: { ...t, host: 'bad host;rm' }, cols: 80, rows: 24 }).success).toBe(false);
    expect(open.safeParse({ target: { ...t, port: 70000 }, cols: 80, rows: 24 }).success).toBe(false);
    const save = sshMethods['ssh.profiles.save'].args;
    expect(save.safeParse({ name: 'x', host: 'h', username: 'u', credentials: { kind: 'generate' }, agentForward: true }).success).toBe(
      false,
    );
    expect(sshMethods['ssh.typeInto'].args.safeParse({ sessionId: 's', script: 'x', path: '/tmp/a b' }).success).toBe(false);
  });
});
