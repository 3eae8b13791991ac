// Signing in with the user's SSH agent: a real `ssh-agent` holding a key added with `ssh-add`, a
// real sshd that knows only that key's public half. Nothing of the key passes through POV Desk.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs } from '../support/system';
import { Consumer, makeEnv, nextPrompt, run, waitFor, waitState, type Env } from './harness';
import { Sshd, sshLogin } from './sshd';

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen', 'ssh-agent', 'ssh-add']);

describe.skipIf(skip)('SSH agent sign-in (real ssh-agent and sshd)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'povdesk-agent-'));
  const sock = join(dir, 'agent.sock');
  let agent: ChildProcess;
  let sshd: Sshd;
  let jumpd: Sshd;
  const keyFile = join(dir, 'id_ed25519');
  const otherKey = join(dir, 'other');

  beforeAll(async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'agent-key', '-f', keyFile]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'not-in-agent', '-f', otherKey]);
    agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    await waitFor('the agent socket', () => existsSync(sock));
    execFileSync('ssh-add', [keyFile], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
    sshd = new Sshd();
    sshd.authorize(readFileSync(`${keyFile}.pub`, 'utf8'));
    await sshd.start();
    jumpd = new Sshd({ extra: ['AllowTcpForwarding yes'] });
    jumpd.authorize(readFileSync(`${keyFile}.pub`, 'utf8'));
    await jumpd.start();
  });
  afterAll(async () => {
    agent?.kill();
    await sshd?.dispose();
    await jumpd?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Trusts each hop's host key as it is asked (`hops` of them) and waits for the shell. */
  const shell = async (env: Env, id: string, hops = 1) => {
    const c = new Consumer(env.hub, id);
    for (let i = 0; i < hops; i++) env.manager.answerHostKey((await nextPrompt(env, id)).promptId, true);
    await waitState(env, id, 'open');
    return c;
  };

  it('an ad-hoc target and its jump host sign in through the agent; sshd saw the agent key', async () => {
    const env = makeEnv({ agentSocket: () => sock });
    try {
      const id = await env.manager.open({
        target: {
          host: 'localhost',
          port: sshd.port,
          username: sshLogin(),
          auth: { kind: 'agent' },
          jump: [{ host: '127.0.0.1', port: jumpd.port, username: sshLogin() }],
          keepaliveSec: 15,
          autoReconnect: false,
        },
        cols: 80,
        rows: 24,
      });
      const c = await shell(env, id, 2);
      await run(env, c, 'echo agent-$((20+22))', /agent-42/);
      const fp = execFileSync('ssh-keygen', ['-lf', `${keyFile}.pub`], { encoding: 'utf8' }).split(/\s+/)[1]!;
      for (const d of [jumpd, sshd])
        expect(d.log).toMatch(new RegExp(`Accepted publickey for ${sshLogin()} .* ED25519 ${fp.replace(/[+/]/g, '\\$&')}`));
    } finally {
      env.dispose();
    }
  });

  it('a profile that signs in with the agent stores nothing in the keychain and connects', async () => {
    const env = makeEnv({ agentSocket: () => sock });
    try {
      const p = await env.manager.profiles.save({
        name: 'via agent',
        host: '127.0.0.1',
        port: sshd.port,
        username: sshLogin(),
        credentials: { kind: 'agent' },
        jump: [],
        keepaliveSec: 15,
        autoReconnect: false,
        agentForward: false,
      });
      expect(p).toMatchObject({ authKind: 'agent', publicKey: null });
      for (const kind of ['key', 'passphrase', 'password']) expect(await env.secrets.get(`ssh:profile:${p.id}:${kind}`)).toBeNull();
      const c = await shell(env, await env.manager.open({ profileId: p.id, cols: 80, rows: 24 }));
      await run(env, c, 'echo profile-$((1+1))', /profile-2/);
    } finally {
      env.dispose();
    }
  });

  it('no agent: refused before anything connects, saying what to do', async () => {
    const env = makeEnv({ agentSocket: () => null });
    try {
      await expect(
        env.manager.open({
          target: {
            host: '127.0.0.1',
            port: sshd.port,
            username: sshLogin(),
            auth: { kind: 'agent' },
            jump: [],
            keepaliveSec: 15,
            autoReconnect: false,
          },
          cols: 80,
          rows: 24,
        }),
      ).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/no SSH agent: .*SSH_AUTH_SOCK.*ssh-add/) });
      expect(env.manager.list()).toEqual([]);
    } finally {
      env.dispose();
    }
  });

  it('an agent whose keys the server does not accept: failed, naming the agent', async () => {
    const other = new Sshd();
    other.authorize(readFileSync(`${otherKey}.pub`, 'utf8'));
    await other.start();
    const env = makeEnv({ agentSocket: () => sock });
    try {
      const id = await env.manager.open({
        target: {
          host: '127.0.0.1',
          port: other.port,
          username: sshLogin(),
          auth: { kind: 'agent' },
          jump: [],
          keepaliveSec: 15,
          autoReconnect: false,
        },
        cols: 80,
        rows: 24,
      });
      env.manager.answerHostKey((await nextPrompt(env, id)).promptId, true);
      const s = await waitState(env, id, 'closed');
      expect(s).toMatchObject({ closedBy: 'failed', reason: expect.stringMatching(/accepted none of the keys the SSH agent holds/) });
    } finally {
      env.dispose();
      await other.dispose();
    }
  });
});

describe('migration 10: profiles may sign in with the agent', () => {
  it('keeps every profile saved before it, and a database before it refuses "agent"', async () => {
    const { openDatabase } = await import('../../main/services/store/db');
    const { migrations } = await import('../../main/services/store/migrations');
    const dir = mkdtempSync(join(tmpdir(), 'povdesk-mig10-'));
    try {
      const file = join(dir, 'p.db');
      const before = openDatabase(
        file,
        migrations.filter((m) => m.version < 10),
      );
      const insert = before.prepare(
        `INSERT INTO ssh_profiles (id, name, host, port, username, auth_kind, public_key, jump_json, keepalive_sec, ` +
          `auto_reconnect, agent_forward, created_at, updated_at)
        VALUES (@id, @name, 'h.example', 2222, 'se', @kind, @pub, ` +
          `'[{"host":"b","port":22,"username":"x","profileId":null}]', 40, 0, 0, '2026-01-01T00:00:00.000Z', ` +
          `'2026-01-02T00:00:00.000Z')`,
      );
      insert.run({ id: 'k', name: 'key one', kind: 'key', pub: 'ssh-ed25519 AAAA k' });
      insert.run({ id: 'p', name: 'pw one', kind: 'password', pub: null });
      expect(() => insert.run({ id: 'a', name: 'agent one', kind: 'agent', pub: null })).toThrow(/CHECK constraint failed/);
      const rows = before.prepare('SELECT * FROM ssh_profiles ORDER BY id').all();
      before.close();

      const db = openDatabase(file);
      expect(db.prepare('SELECT * FROM ssh_profiles ORDER BY id').all()).toEqual(rows);
      db.prepare(
        `INSERT INTO ssh_profiles (id, name, host, port, username, auth_kind, created_at, updated_at) VALUES ('a', 'agent one', ` +
          `'h', 22, 'se', 'agent', 'x', 'x')`,
      ).run();
      expect(() =>
        db
          .prepare(
            `INSERT INTO ssh_profiles (id, name, host, port, username, auth_kind, created_at, updated_at) VALUES ('z', 'z', 'h', ` +
              `22, 'se', 'magic', 'x', 'x')`,
          )
          .run(),
      ).toThrow(/CHECK constraint failed/);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
