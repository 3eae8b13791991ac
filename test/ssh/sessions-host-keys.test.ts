import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Fingerprint } from '../../main/services/ssh/fingerprint';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { needs } from '../support/system';
import { Consumer, makeEnv, nextPrompt, run, waitFor, waitState } from './harness';
import { loopbackSshd } from './sessions-setup';
import { sshLogin } from './sshd';

/* Host keys in real sessions: first contact, pre-trusted keys, OpenSSH's known_hosts, a refusal, a changed key. */

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);

describe.skipIf(skip)('ssh sessions against a real sshd on loopback: host keys', () => {
  const t = loopbackSshd();

  it('computes fingerprints exactly as ssh-keygen -l prints them', () => {
    const { line, fingerprint } = t.sshd.hostKey();
    expect(sha256Fingerprint(Buffer.from(line.split(' ')[1]!, 'base64'))).toBe(fingerprint);
  });

  it('first contact: shows the fingerprint and holds authentication until the user accepts', async () => {
    const e = t.env();
    t.sshd.clearLog();
    const id = await e.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    const c = new Consumer(e.hub, id);
    const p = await nextPrompt(e, id);
    expect(p).toMatchObject({
      kind: 'first',
      host: '127.0.0.1',
      port: t.sshd.port,
      keyType: 'ssh-ed25519',
      fingerprint: t.sshd.hostKey().fingerprint,
      stored: null,
    });
    // The user takes their time: nothing has tried to log in.
    await new Promise((r) => setTimeout(r, 700));
    expect(e.statuses.items.filter((s) => s.sessionId === id).at(-1)?.state).toBe('verifying');
    expect(t.sshd.log).not.toMatch(/userauth-request|Accepted publickey/);
    e.manager.answerHostKey(p.promptId, true);
    await waitState(e, id, 'open');
    await run(e, c, 'echo ok-$((40+2))', /ok-42/);
    // Positive control for the "no authentication attempted" checks: sshd logs userauth-request.
    expect(t.sshd.log).toMatch(new RegExp(`userauth-request for user ${sshLogin()} `));
    expect(t.sshd.log).toMatch(new RegExp(`Accepted publickey for ${sshLogin()} `));
    expect(e.manager.knownHosts.get('127.0.0.1', t.sshd.port)?.fingerprint).toBe(p.fingerprint);
    // Second connection: the stored key matches, no question asked.
    const before = e.prompts.items.length;
    const id2 = await e.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    await waitState(e, id2, 'open');
    expect(e.prompts.items.length).toBe(before);
  });

  it('a pre-trusted key (a local attested VM): no question when it matches, refused without one when it differs', async () => {
    const blob = Buffer.from(t.sshd.hostKey().line.split(' ')[1]!, 'base64');
    const good = makeEnv({
      pretrusted: async (host, port) =>
        host === '127.0.0.1' && port === t.sshd.port ? { key: blob, what: 'local VM t (attested)' } : null,
    });
    t.track(good);
    const id = await good.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    await waitState(good, id, 'open');
    expect(good.prompts.items).toEqual([]);
    const other = Buffer.from(generateEd25519('other').public.split(' ')[1]!, 'base64');
    const bad = makeEnv({ pretrusted: async () => ({ key: other, what: 'local VM t (attested)' }) });
    t.track(bad);
    t.sshd.clearLog();
    const id2 = await bad.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    const s = await waitState(bad, id2, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toMatch(/is not the key of local VM t \(attested\).*refused without asking/);
    expect(bad.prompts.items).toEqual([]);
    expect(t.sshd.log).not.toMatch(/userauth-request/);
  });

  it(
    "OpenSSH's known_hosts (hashed, as Debian writes it): its key connects without a question; " +
      'another key is a change naming the line; @revoked is refused',
    async () => {
      const line = t.sshd.hostKey().line.split(' ').slice(0, 2).join(' ');
      const other = generateEd25519('other').public.split(' ').slice(0, 2).join(' ');
      const file = (name: string, body: string) => {
        const f = join(t.sshd.dir, name);
        writeFileSync(f, body);
        execFileSync('ssh-keygen', ['-q', '-H', '-f', f], { stdio: 'ignore' });
        return f;
      };
      const name = `[127.0.0.1]:${t.sshd.port}`;
      const trusts = t.env();
      const good = makeEnv({ opensshKnownHosts: [join(t.sshd.dir, 'none'), file('kh-good', `other.example ${other}\n${name} ${line}\n`)] });
      t.track(good);
      const id = await good.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
      await waitState(good, id, 'open');
      expect(good.prompts.items).toEqual([]);
      // POV Desk's own list now holds it, so the Known hosts panel shows what was trusted.
      expect(good.manager.knownHosts.get('127.0.0.1', t.sshd.port)?.fingerprint).toBe(t.sshd.hostKey().fingerprint);
      expect(trusts.manager.knownHosts.list()).toEqual([]);

      const changedFile = file('kh-changed', `${name} ${other}\n`);
      const changed = makeEnv({ opensshKnownHosts: [changedFile] });
      t.track(changed);
      t.sshd.clearLog();
      const id2 = await changed.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
      const p = await nextPrompt(changed, id2);
      expect(p).toMatchObject({
        kind: 'changed',
        fingerprint: t.sshd.hostKey().fingerprint,
        stored: { keyType: 'ssh-ed25519', source: `${changedFile} line 1` },
      });
      expect(p.stored?.fingerprint).toBe(sha256Fingerprint(Buffer.from(other.split(' ')[1]!, 'base64')));
      expect(() => changed.manager.answerHostKey(p.promptId, true)).toThrow(/CHANGED/);
      changed.manager.answerHostKey(p.promptId, false);
      expect((await waitState(changed, id2, 'closed')).closedBy).toBe('refused');
      expect(t.sshd.log).not.toMatch(/userauth-request/);

      const revoked = makeEnv({ opensshKnownHosts: [file('kh-revoked', `@revoked ${name} ${line}\n`)] });
      t.track(revoked);
      // Even a key POV Desk already stored is refused once OpenSSH marks it revoked.
      revoked.manager.knownHosts.put('127.0.0.1', t.sshd.port, Buffer.from(line.split(' ')[1]!, 'base64'));
      const id3 = await revoked.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
      const s = await waitState(revoked, id3, 'closed');
      expect(s.closedBy).toBe('refused');
      expect(s.reason).toMatch(/is marked @revoked in .*kh-revoked line 1; refused without asking/);
      expect(revoked.prompts.items).toEqual([]);
    },
  );

  it('reject: the session closes as refused, nothing stored, no authentication attempted', async () => {
    const e = t.env();
    t.sshd.clearLog();
    const id = await e.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    const p = await nextPrompt(e, id);
    e.manager.answerHostKey(p.promptId, false);
    const s = await waitState(e, id, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toContain(p.fingerprint);
    expect(e.manager.knownHosts.list()).toEqual([]);
    await waitFor('sshd to log the disconnect', () => /Connection (closed|reset)|disconnect/i.test(t.sshd.log));
    expect(t.sshd.log).not.toMatch(/userauth-request/);
  });

  it('a changed host key is refused showing both fingerprints; replacing it takes an explicit flag', async () => {
    const e = t.env();
    await t.openAccepted(e);
    const old = t.sshd.hostKey().fingerprint;
    t.sshd.newHostKey();
    await t.sshd.restart();
    const now = t.sshd.hostKey().fingerprint;
    expect(now).not.toBe(old);
    t.sshd.clearLog();
    const id = await e.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    const p = await nextPrompt(e, id);
    expect(p).toMatchObject({ kind: 'changed', fingerprint: now, stored: { fingerprint: old } });
    expect(() => e.manager.answerHostKey(p.promptId, true)).toThrow(/CHANGED.*replace: true/s);
    e.manager.answerHostKey(p.promptId, false);
    const s = await waitState(e, id, 'closed');
    expect(s.closedBy).toBe('refused');
    expect(s.reason).toContain(old);
    expect(s.reason).toContain(now);
    await waitFor('sshd to log the disconnect', () => /Connection (closed|reset)|disconnect/i.test(t.sshd.log));
    expect(t.sshd.log).not.toMatch(/userauth-request/);
    expect(e.manager.knownHosts.get('127.0.0.1', t.sshd.port)?.fingerprint).toBe(old);
    // The deliberate way: accept with replace.
    const id2 = await e.manager.open({ target: t.keyTarget(), cols: 80, rows: 24 });
    const p2 = await nextPrompt(e, id2);
    e.manager.answerHostKey(p2.promptId, true, true);
    await waitState(e, id2, 'open');
    expect(e.manager.knownHosts.get('127.0.0.1', t.sshd.port)?.fingerprint).toBe(now);
  });
});
