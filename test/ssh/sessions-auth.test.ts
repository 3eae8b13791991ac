import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { needs } from '../support/system';
import { Consumer, nextPrompt, run, waitState } from './harness';
import { loopbackSshd } from './sessions-setup';
import { Sshd, sshLogin } from './sshd';

/* Signing in, in real sessions: a password (directly and through PAM), a generated and an imported key. */

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);
const USER = 'povdesksshtest';
const PASSWORD = 'Corr3ct-h0rse-' + process.pid;

describe.skipIf(skip)('ssh sessions against a real sshd on loopback: signing in', () => {
  const t = loopbackSshd({ passwordUser: { name: USER, password: PASSWORD } });

  it('password authentication with a real account', async (ctx) => {
    if (t.passwordSkip) ctx.skip(t.passwordSkip);
    const e = t.env();
    const c = await t.openAccepted(e, t.keyTarget({ username: USER, auth: { kind: 'password', password: PASSWORD } }));
    await run(e, c, 'echo "I am $(id -un)"', new RegExp(`I am ${USER}`));
    // A wrong password fails without retrying and says so.
    const bad = await e.manager.open({
      target: t.keyTarget({ username: USER, auth: { kind: 'password', password: 'wrong' } }),
      cols: 80,
      rows: 24,
    });
    const s = await waitState(e, bad, 'closed');
    expect(s.closedBy).toBe('failed');
    expect(s.reason).toMatch(/authentication failed/);
  });

  it('password through PAM keyboard-interactive (servers with PasswordAuthentication no)', async (ctx) => {
    if (t.passwordSkip) ctx.skip(t.passwordSkip);
    const pamd = new Sshd({ password: true, pam: true });
    await pamd.start();
    try {
      const e = t.env();
      const c = await t.openAccepted(e, t.keyTarget({ port: pamd.port, username: USER, auth: { kind: 'password', password: PASSWORD } }));
      await run(e, c, 'echo "pam $(id -un)"', new RegExp(`pam ${USER}`));
      expect(pamd.log).toMatch(/Accepted keyboard-interactive\/pam for/);
    } finally {
      await pamd.dispose();
    }
  });

  it('key authentication with a generated profile key and an imported passphrase-protected key', async () => {
    const e = t.env();
    const gen = await e.manager.profiles.save({
      name: 'gen',
      host: '127.0.0.1',
      port: t.sshd.port,
      username: sshLogin(),
      credentials: { kind: 'generate' },
      jump: [],
      keepaliveSec: 15,
      autoReconnect: false,
      agentForward: false,
    });
    expect(gen.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ povdesk-gen$/);
    t.sshd.authorize(gen.publicKey!);
    const id = await e.manager.open({ profileId: gen.id, cols: 80, rows: 24 });
    const c = new Consumer(e.hub, id);
    e.manager.answerHostKey((await nextPrompt(e, id)).promptId, true);
    await waitState(e, id, 'open');
    await run(e, c, 'echo gen-$((1+1))', /gen-2/);

    const dir = mkdtempSync(join(tmpdir(), 'povdesk-key-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'sesame', '-C', 'imp', '-f', join(dir, 'k')]);
    const priv = readFileSync(join(dir, 'k'), 'utf8');
    t.sshd.authorize(readFileSync(join(dir, 'k.pub'), 'utf8'));
    rmSync(dir, { recursive: true, force: true });
    await expect(
      e.manager.profiles.save({
        name: 'imp',
        host: '127.0.0.1',
        port: t.sshd.port,
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
      port: t.sshd.port,
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
});
