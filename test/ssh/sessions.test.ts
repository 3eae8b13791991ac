import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Fingerprint } from '../../main/services/ssh/fingerprint';
import { needs } from '../support/system';
import { Consumer, makeEnv, nextPrompt, run, waitFor, waitState, type Env } from './harness';
import { FreezableRelay, makeUser, removeUser, Sshd, sshLogin } from './sshd';
import { generateEd25519 } from '../../main/services/ssh/keygen';

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);
const USER = 'povdesksshtest';
const PASSWORD = 'Corr3ct-h0rse-' + process.pid;

describe.skipIf(skip)('ssh sessions against a real sshd on loopback', () => {
  let sshd: Sshd;
  let clientKey: { private: string; public: string };
  let passwordSkip: string | null = null;
  const envs: Env[] = [];
  const env = () => {
    const e = makeEnv();
    envs.push(e);
    return e;
  };
  const keyTarget = (extra: object = {}) => ({
    host: '127.0.0.1',
    port: sshd.port,
    username: sshLogin(),
    auth: { kind: 'privateKey' as const, privateKey: clientKey.private },
    jump: [],
    keepaliveSec: 15,
    autoReconnect: false,
    ...extra,
  });
  /** Opens and accepts the first-contact key; returns the consumer once the shell is open. */
  async function openAccepted(e: Env, target = keyTarget(), size = { cols: 80, rows: 24 }) {
    const id = await e.manager.open({ target, ...size });
    const c = new Consumer(e.hub, id);
    const p = await nextPrompt(e, id);
    e.manager.answerHostKey(p.promptId, true);
    await waitState(e, id, 'open');
    return c;
  }

  beforeAll(async () => {
    clientKey = generateEd25519('povdesk-test');
    passwordSkip = makeUser(USER, PASSWORD);
    sshd = new Sshd({ password: passwordSkip === null });
    sshd.authorize(clientKey.public);
    await sshd.start();
  });
  afterAll(async () => {
    for (const e of envs) e.dispose();
    await sshd?.dispose();
    if (passwordSkip === null) removeUser(USER);
  });

  it('computes fingerprints exactly as ssh-keygen -l prints them', () => {
    const { line, fingerprint } = sshd.hostKey();
    expect(sha256Fingerprint(Buffer.from(line.split(' ')[1]!, 'base64'))).toBe(fingerprint);
  });

  it('first contact: shows the fingerprint and holds authentication until the user accepts', async () => {
    const e = env();
    sshd.clearLog();
    const id = await e.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const c = new Consumer(e.hub, id);
    const p = await nextPrompt(e, id);
    expect(p).toMatchObject({
      kind: 'first',
      host: '127.0.0.1',
      port: sshd.port,
      keyType: 'ssh-ed25519',
      fingerprint: sshd.hostKey().fingerprint,
      stored: null,
    });
    // The user takes their time: nothing has tried to log in.
    await new Promise((r) => setTimeout(r, 700));
    expect(e.statuses.items.filter((s) => s.sessionId === id).at(-1)?.state).toBe('verifying');
    expect(sshd.log).not.toMatch(/userauth-request|Accepted publickey/);
    e.manager.answerHostKey(p.promptId, true);
    await waitState(e, id, 'open');
    await run(e, c, 'echo ok-$((40+2))', /ok-42/);
    // Positive control for the "no authentication attempted" checks: sshd logs userauth-request.
    expect(sshd.log).toMatch(new RegExp(`userauth-request for user ${sshLogin()} `));
    expect(sshd.log).toMatch(new RegExp(`Accepted publickey for ${sshLogin()} `));
    expect(e.manager.knownHosts.get('127.0.0.1', sshd.port)?.fingerprint).toBe(p.fingerprint);
    // Second connection: the stored key matches, no question asked.
    const before = e.prompts.items.length;
    const id2 = await e.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    await waitState(e, id2, 'open');
    expect(e.prompts.items.length).toBe(before);
  });

  it('a pre-trusted key (a local attested VM): no question when it matches, refused without one when it differs', async () => {
    const blob = Buffer.from(sshd.hostKey().line.split(' ')[1]!, 'base64');
    const good = makeEnv({
      pretrusted: async (host, port) => (host === '127.0.0.1' && port === sshd.port ? { key: blob, what: 'local VM t (attested)' } : null),
    });
    envs.push(good);
    const id = await good.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    await waitState(good, id, 'open');
    expect(good.prompts.items).toEqual([]);
    const other = Buffer.from(generateEd25519('other').public.split(' ')[1]!, 'base64');
    const bad = makeEnv({ pretrusted: async () => ({ key: other, what: 'local VM t (attested)' }) });
    envs.push(bad);
    sshd.clearLog();
    const id2 = await bad.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const s = await waitState(bad, id2, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toMatch(/is not the key of local VM t \(attested\).*refused without asking/);
    expect(bad.prompts.items).toEqual([]);
    expect(sshd.log).not.toMatch(/userauth-request/);
  });

  it("OpenSSH's known_hosts (hashed, as Debian writes it): its key connects without a question; another key is a change naming the line; @revoked is refused", async () => {
    const line = sshd.hostKey().line.split(' ').slice(0, 2).join(' ');
    const other = generateEd25519('other').public.split(' ').slice(0, 2).join(' ');
    const file = (name: string, body: string) => {
      const f = join(sshd.dir, name);
      writeFileSync(f, body);
      execFileSync('ssh-keygen', ['-q', '-H', '-f', f], { stdio: 'ignore' });
      return f;
    };
    const name = `[127.0.0.1]:${sshd.port}`;
    const trusts = env();
    const good = makeEnv({ opensshKnownHosts: [join(sshd.dir, 'none'), file('kh-good', `other.example ${other}\n${name} ${line}\n`)] });
    envs.push(good);
    const id = await good.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    await waitState(good, id, 'open');
    expect(good.prompts.items).toEqual([]);
    // POV Desk's own list now holds it, so the Known hosts panel shows what was trusted.
    expect(good.manager.knownHosts.get('127.0.0.1', sshd.port)?.fingerprint).toBe(sshd.hostKey().fingerprint);
    expect(trusts.manager.knownHosts.list()).toEqual([]);

    const changedFile = file('kh-changed', `${name} ${other}\n`);
    const changed = makeEnv({ opensshKnownHosts: [changedFile] });
    envs.push(changed);
    sshd.clearLog();
    const id2 = await changed.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const p = await nextPrompt(changed, id2);
    expect(p).toMatchObject({
      kind: 'changed',
      fingerprint: sshd.hostKey().fingerprint,
      stored: { keyType: 'ssh-ed25519', source: `${changedFile} line 1` },
    });
    expect(p.stored?.fingerprint).toBe(sha256Fingerprint(Buffer.from(other.split(' ')[1]!, 'base64')));
    expect(() => changed.manager.answerHostKey(p.promptId, true)).toThrow(/CHANGED/);
    changed.manager.answerHostKey(p.promptId, false);
    expect((await waitState(changed, id2, 'closed')).closedBy).toBe('refused');
    expect(sshd.log).not.toMatch(/userauth-request/);

    const revoked = makeEnv({ opensshKnownHosts: [file('kh-revoked', `@revoked ${name} ${line}\n`)] });
    envs.push(revoked);
    // Even a key POV Desk already stored is refused once OpenSSH marks it revoked.
    revoked.manager.knownHosts.put('127.0.0.1', sshd.port, Buffer.from(line.split(' ')[1]!, 'base64'));
    const id3 = await revoked.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const s = await waitState(revoked, id3, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toMatch(/is marked @revoked in .*kh-revoked line 1; refused without asking/);
    expect(revoked.prompts.items).toEqual([]);
  });

  it('reject: the session closes as refused, nothing stored, no authentication attempted', async () => {
    const e = env();
    sshd.clearLog();
    const id = await e.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const p = await nextPrompt(e, id);
    e.manager.answerHostKey(p.promptId, false);
    const s = await waitState(e, id, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toContain(p.fingerprint);
    expect(e.manager.knownHosts.list()).toEqual([]);
    await waitFor('sshd to log the disconnect', () => /Connection (closed|reset)|disconnect/i.test(sshd.log));
    expect(sshd.log).not.toMatch(/userauth-request/);
  });

  it('a changed host key is refused showing both fingerprints; replacing it takes an explicit flag', async () => {
    const e = env();
    await openAccepted(e);
    const old = sshd.hostKey().fingerprint;
    sshd.newHostKey();
    await sshd.restart();
    const now = sshd.hostKey().fingerprint;
    expect(now).not.toBe(old);
    sshd.clearLog();
    const id = await e.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const p = await nextPrompt(e, id);
    expect(p).toMatchObject({ kind: 'changed', fingerprint: now, stored: { fingerprint: old } });
    expect(() => e.manager.answerHostKey(p.promptId, true)).toThrow(/CHANGED.*replace: true/s);
    e.manager.answerHostKey(p.promptId, false);
    const s = await waitState(e, id, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toContain(old);
    expect(s.reason).toContain(now);
    await waitFor('sshd to log the disconnect', () => /Connection (closed|reset)|disconnect/i.test(sshd.log));
    expect(sshd.log).not.toMatch(/userauth-request/);
    expect(e.manager.knownHosts.get('127.0.0.1', sshd.port)?.fingerprint).toBe(old);
    // The deliberate way: accept with replace.
    const id2 = await e.manager.open({ target: keyTarget(), cols: 80, rows: 24 });
    const p2 = await nextPrompt(e, id2);
    e.manager.answerHostKey(p2.promptId, true, true);
    await waitState(e, id2, 'open');
    expect(e.manager.knownHosts.get('127.0.0.1', sshd.port)?.fingerprint).toBe(now);
  });

  it('password authentication with a real account', async (ctx) => {
    if (passwordSkip) ctx.skip(passwordSkip);
    const e = env();
    const c = await openAccepted(e, keyTarget({ username: USER, auth: { kind: 'password', password: PASSWORD } }));
    await run(e, c, 'echo "I am $(id -un)"', new RegExp(`I am ${USER}`));
    // A wrong password fails without retrying and says so.
    const bad = await e.manager.open({
      target: keyTarget({ username: USER, auth: { kind: 'password', password: 'wrong' } }),
      cols: 80,
      rows: 24,
    });
    const s = await waitState(e, bad, 'closed');
    expect(s.closedBy).toBe('failed');
    expect(s.reason).toMatch(/authentication failed/);
  });

  it('password through PAM keyboard-interactive (servers with PasswordAuthentication no)', async (ctx) => {
    if (passwordSkip) ctx.skip(passwordSkip);
    const pamd = new Sshd({ password: true, pam: true });
    await pamd.start();
    try {
      const e = env();
      const c = await openAccepted(e, keyTarget({ port: pamd.port, username: USER, auth: { kind: 'password', password: PASSWORD } }));
      await run(e, c, 'echo "pam $(id -un)"', new RegExp(`pam ${USER}`));
      expect(pamd.log).toMatch(/Accepted keyboard-interactive\/pam for/);
    } finally {
      await pamd.dispose();
    }
  });

  it('key authentication with a generated profile key and an imported passphrase-protected key', async () => {
    const e = env();
    const gen = await e.manager.profiles.save({
      name: 'gen',
      host: '127.0.0.1',
      port: sshd.port,
      username: sshLogin(),
      credentials: { kind: 'generate' },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
      agentForward: false,
    });
    expect(gen.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ povdesk-gen$/);
    sshd.authorize(gen.publicKey!);
    const id = await e.manager.open({ profileId: gen.id, cols: 80, rows: 24 });
    const c = new Consumer(e.hub, id);
    e.manager.answerHostKey((await nextPrompt(e, id)).promptId, true);
    await waitState(e, id, 'open');
    await run(e, c, 'echo gen-$((1+1))', /gen-2/);

    const dir = mkdtempSync(join(tmpdir(), 'povdesk-key-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'sesame', '-C', 'imp', '-f', join(dir, 'k')]);
    const priv = readFileSync(join(dir, 'k'), 'utf8');
    sshd.authorize(readFileSync(join(dir, 'k.pub'), 'utf8'));
    rmSync(dir, { recursive: true, force: true });
    await expect(
      e.manager.profiles.save({
        name: 'imp',
        host: '127.0.0.1',
        port: sshd.port,
        username: sshLogin(),
        credentials: { kind: 'import', privateKey: priv, passphrase: 'nope' },
        jump: [],
        keepaliveSec: 15,
        autoReconnect: false,
        agentForward: false,
      }),
    ).rejects.toThrow(/passphrase/);
    const imp = await e.manager.profiles.save({
      name: 'imp',
      host: '127.0.0.1',
      port: sshd.port,
      username: sshLogin(),
      credentials: { kind: 'import', privateKey: priv, passphrase: 'sesame' },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
      agentForward: false,
    });
    const id2 = await e.manager.open({ profileId: imp.id, cols: 80, rows: 24 });
    const c2 = new Consumer(e.hub, id2);
    await waitState(e, id2, 'open');
    await run(e, c2, 'echo imp-$((2+3))', /imp-5/);
  });

  it('ProxyJump through a second sshd verifies each hop against its own host and port', async () => {
    const jumpd = new Sshd();
    jumpd.authorize(clientKey.public);
    await jumpd.start();
    try {
      const e = env();
      const id = await e.manager.open({
        target: keyTarget({ host: 'localhost', jump: [{ host: '127.0.0.1', port: jumpd.port, username: sshLogin() }] }),
        cols: 80,
        rows: 24,
      });
      const c = new Consumer(e.hub, id);
      const p1 = await nextPrompt(e, id);
      expect(p1).toMatchObject({ host: '127.0.0.1', port: jumpd.port, fingerprint: jumpd.hostKey().fingerprint });
      e.manager.answerHostKey(p1.promptId, true);
      const p2 = await nextPrompt(e, id);
      expect(p2).toMatchObject({ host: 'localhost', port: sshd.port, fingerprint: sshd.hostKey().fingerprint });
      e.manager.answerHostKey(p2.promptId, true);
      await waitState(e, id, 'open');
      await run(e, c, 'echo via-$((6*7))', /via-42/);
      expect(jumpd.log).toMatch(new RegExp(`Accepted publickey for ${sshLogin()} `));
      expect(jumpd.log).toMatch(/direct-tcpip|Connection from 127\.0\.0\.1/);
    } finally {
      await jumpd.dispose();
    }
  });

  it('two jump hosts in a row, the first with its own key', async () => {
    const own = generateEd25519('povdesk-test');
    const j1 = new Sshd();
    j1.authorize(own.public);
    const j2 = new Sshd();
    j2.authorize(clientKey.public);
    await j1.start();
    await j2.start();
    try {
      const e = env();
      const id = await e.manager.open({
        target: keyTarget({
          jump: [
            { host: '127.0.0.1', port: j1.port, username: sshLogin(), auth: { kind: 'privateKey', privateKey: own.private } },
            { host: 'localhost', port: j2.port, username: sshLogin() },
          ],
        }),
        cols: 80,
        rows: 24,
      });
      const c = new Consumer(e.hub, id);
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const p = await nextPrompt(e, id);
        seen.push(`${p.host}:${p.port} ${p.fingerprint}`);
        e.manager.answerHostKey(p.promptId, true);
      }
      expect(seen).toEqual([
        `127.0.0.1:${j1.port} ${j1.hostKey().fingerprint}`,
        `localhost:${j2.port} ${j2.hostKey().fingerprint}`,
        `127.0.0.1:${sshd.port} ${sshd.hostKey().fingerprint}`,
      ]);
      await waitState(e, id, 'open');
      await run(e, c, 'echo two-hops-$((1+1))', /two-hops-2/);
      // The first hop only knows its own key: the target's key was never offered to it.
      expect(j1.log).toMatch(new RegExp(`Accepted publickey for ${sshLogin()} `));
    } finally {
      await j1.dispose();
      await j2.dispose();
    }
  });

  it("a saved profile whose jump host signs in with another profile's key", async () => {
    const jumpd = new Sshd();
    await jumpd.start();
    try {
      const e = env();
      const common = { keepaliveSec: 15, autoReconnect: false, agentForward: false as const };
      const bastion = await e.manager.profiles.save({
        name: 'bastion',
        host: '127.0.0.1',
        port: jumpd.port,
        username: sshLogin(),
        credentials: { kind: 'generate' },
        jump: [],
        ...common,
      });
      jumpd.authorize(bastion.publicKey!);
      const inner = await e.manager.profiles.save({
        name: 'inner',
        host: '127.0.0.1',
        port: sshd.port,
        username: sshLogin(),
        credentials: { kind: 'import', privateKey: clientKey.private },
        jump: [{ host: '127.0.0.1', port: jumpd.port, username: sshLogin(), profileId: bastion.id }],
        ...common,
      });
      const id = await e.manager.open({ profileId: inner.id, cols: 80, rows: 24 });
      const c = new Consumer(e.hub, id);
      for (let i = 0; i < 2; i++) e.manager.answerHostKey((await nextPrompt(e, id)).promptId, true);
      await waitState(e, id, 'open');
      await run(e, c, 'echo prof-jump-$((3+3))', /prof-jump-6/);
    } finally {
      await jumpd.dispose();
    }
  });

  it('a resize reaches the server (stty size)', async () => {
    const e = env();
    const c = await openAccepted(e, keyTarget(), { cols: 80, rows: 24 });
    await run(e, c, 'stty size; echo sz-$((1+1))', /24 80\r?\n(?:.*\n)?sz-2/);
    e.manager.resize(c.sessionId, 132, 43);
    await run(e, c, 'stty size; echo sz2-$((1+1))', /43 132\r?\n(?:.*\n)?sz2-2/);
  });

  it('tells closed by you, shell exited and a dropped connection apart; reconnects after sshd restarts and re-sends the size', async () => {
    const e = env();
    const c = await openAccepted(e, keyTarget({ autoReconnect: true }));
    e.manager.resize(c.sessionId, 100, 30);
    await sshd.restart();
    const dropped = await waitFor('a dropped status', () =>
      e.statuses.items.find((s) => s.sessionId === c.sessionId && s.closedBy === 'dropped'),
    );
    expect(dropped.state).toBe('reconnecting');
    const back = await waitFor('reopened', () =>
      e.statuses.items.find((s) => s.sessionId === c.sessionId && s.state === 'open' && s.attempt > 0),
    );
    expect(back.reason).toMatch(/reconnected/);
    await run(e, c, 'stty size; echo rs-$((1+1))', /30 100\r?\n(?:.*\n)?rs-2/);

    e.manager.input(c.sessionId, 'exit 3\n');
    const ex = await waitState(e, c.sessionId, 'closed');
    expect(ex.closedBy).toBe('exited');
    expect(ex.reason).toMatch(/code 3/);

    const id2 = await e.manager.open({ target: keyTarget({ autoReconnect: true }), cols: 80, rows: 24 });
    await waitState(e, id2, 'open');
    const c2 = new Consumer(e.hub, id2);
    e.manager.close(c2.sessionId);
    const mine = e.statuses.items.filter((s) => s.sessionId === c2.sessionId).at(-1)!;
    expect(mine).toMatchObject({ state: 'closed', closedBy: 'user', reason: 'closed by you' });
  });

  it('the Reconnect action replaces a live connection without the old one tearing down the new', async () => {
    const e = env();
    const c = await openAccepted(e);
    e.manager.resize(c.sessionId, 91, 27);
    const from = e.statuses.items.length;
    await e.manager.reconnect(c.sessionId);
    await waitState(e, c.sessionId, 'open');
    await new Promise((r) => setTimeout(r, 500));
    expect(e.manager.get(c.sessionId).state.state).toBe('open');
    // One clean pass: no failed attempt and no retry in between.
    const after = e.statuses.items.slice(from).filter((s) => s.sessionId === c.sessionId);
    expect(after.filter((s) => s.closedBy !== null || s.nextRetryMs !== null)).toEqual([]);
    await run(e, c, 'stty size; echo rc-$((1+2))', /27 91\r?\n(?:.*\n)?rc-3/);
  });

  it('keepalive notices a connection gone silent (laptop asleep) and the session reconnects once the network is back', async () => {
    const relay = new FreezableRelay(sshd.port);
    await relay.start();
    try {
      const e = env();
      const id = await e.manager.open({
        target: keyTarget({ port: relay.port, keepaliveSec: 1, autoReconnect: true }),
        cols: 80,
        rows: 24,
      });
      const c = new Consumer(e.hub, id);
      e.manager.answerHostKey((await nextPrompt(e, id)).promptId, true);
      await waitState(e, id, 'open');
      relay.freeze();
      const dropped = await waitFor(
        'keepalive to give up',
        () => e.statuses.items.find((s) => s.sessionId === id && s.closedBy === 'dropped'),
        10_000,
      );
      expect(dropped.reason).toMatch(/keepalive/);
      relay.thaw();
      e.manager.wake();
      await waitFor('reopened', () => e.statuses.items.find((s) => s.sessionId === id && s.state === 'open' && s.attempt > 0));
      await run(e, c, 'echo awake-$((2*2))', /awake-4/);
    } finally {
      relay.close();
    }
  });

  it('types a script into a real shell line by line and reports the sha256 match', async () => {
    const e = env();
    const c = await openAccepted(e);
    const script =
      [
        '#!/bin/sh',
        'echo "hello $USER" > /dev/null',
        "printf '%s\\n' 'quotes \" and $dollars stay'",
        ...Array.from({ length: 40 }, (_, i) => `# line ${i} ${'x'.repeat(i * 5)}`),
      ].join('\n') + '\n';
    const path = join(sshd.scratch, 'typed.sh');
    const r = await e.manager.typeInto(c.sessionId, script, { path });
    expect(r.match).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(script);
    expect(r.lines).toBe(43);
    // The same file hashed by the system tool agrees.
    expect(execFileSync('sha256sum', [path], { encoding: 'utf8' }).split(' ')[0]).toBe(r.expected);
    writeFileSync(path, '');
  });
});
