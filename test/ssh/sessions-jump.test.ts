import { describe, expect, it } from 'vitest';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { needs } from '../support/system';
import { Consumer, nextPrompt, run, waitState } from './harness';
import { loopbackSshd } from './sessions-setup';
import { Sshd, sshLogin } from './sshd';

/* Jump hosts in real sessions: each hop's host key checked on its own, its own key or another profile's. */

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);

describe.skipIf(skip)('ssh sessions against a real sshd on loopback: jump hosts', () => {
  const t = loopbackSshd();

  it('ProxyJump through a second sshd verifies each hop against its own host and port', async () => {
    const jumpd = new Sshd();
    jumpd.authorize(t.clientKey.public);
    await jumpd.start();
    try {
      const e = t.env();
      const id = await e.manager.open({
        target: t.keyTarget({ host: 'localhost', jump: [{ host: '127.0.0.1', port: jumpd.port, username: sshLogin() }] }),
        cols: 80,
        rows: 24,
      });
      const c = new Consumer(e.hub, id);
      const p1 = await nextPrompt(e, id);
      expect(p1).toMatchObject({ host: '127.0.0.1', port: jumpd.port, fingerprint: jumpd.hostKey().fingerprint });
      e.manager.answerHostKey(p1.promptId, true);
      const p2 = await nextPrompt(e, id);
      expect(p2).toMatchObject({ host: 'localhost', port: t.sshd.port, fingerprint: t.sshd.hostKey().fingerprint });
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
    j2.authorize(t.clientKey.public);
    await j1.start();
    await j2.start();
    try {
      const e = t.env();
      const id = await e.manager.open({
        target: t.keyTarget({
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
        `127.0.0.1:${t.sshd.port} ${t.sshd.hostKey().fingerprint}`,
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
      const e = t.env();
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
        port: t.sshd.port,
        username: sshLogin(),
        credentials: { kind: 'import', privateKey: t.clientKey.private },
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
});
