/**
 * The set-up the sessions-*.test.ts suites share: one real sshd on loopback that trusts a fresh
 * ed25519 client key, a test env per test (disposed after the file), the usual key target and a
 * session opened with its first-contact key accepted. Call it inside the suite's describe, so a
 * skipped suite starts nothing.
 */
import { afterAll, beforeAll } from 'vitest';
import { generateEd25519 } from '../../main/services/ssh/keygen';
import { Consumer, makeEnv, nextPrompt, waitState, type Env } from './harness';
import { makeUser, removeUser, Sshd, sshLogin } from './sshd';

export interface LoopbackSshd {
  readonly sshd: Sshd;
  readonly clientKey: { private: string; public: string };
  /** Why password sign-in cannot be tested here (not root), or null; always null without a password user. */
  readonly passwordSkip: string | null;
  /** A fresh env (makeEnv()), disposed after the file. */
  env(): Env;
  /** Disposes an env made with other options after the file. */
  track(e: Env): Env;
  /** A target for the loopback sshd that signs in with the client key; `extra` replaces fields. */
  keyTarget(extra?: object): ReturnType<typeof keyTargetOf>;
  /** Opens and accepts the first-contact key; returns the consumer once the shell is open. */
  openAccepted(e: Env, target?: ReturnType<typeof keyTargetOf>, size?: { cols: number; rows: number }): Promise<Consumer>;
}

function keyTargetOf(sshd: Sshd, clientKey: { private: string }, extra: object = {}) {
  return {
    host: '127.0.0.1',
    port: sshd.port,
    username: sshLogin(),
    auth: { kind: 'privateKey' as const, privateKey: clientKey.private },
    jump: [],
    keepaliveSec: 15,
    autoReconnect: false,
    ...extra,
  };
}

/**
 * Starts the sshd before the suite and stops it after. With `passwordUser`, an account with that
 * password is made (root only) and sshd accepts passwords too; it is removed after the suite.
 */
export function loopbackSshd(opts: { passwordUser?: { name: string; password: string } } = {}): LoopbackSshd {
  let sshd: Sshd | undefined;
  let clientKey: { private: string; public: string } | undefined;
  let passwordSkip: string | null = null;
  const envs: Env[] = [];
  const started = () => {
    if (!sshd || !clientKey) throw new Error('the loopback sshd is not started yet (use it inside a test)');
    return { sshd, clientKey };
  };
  const t: LoopbackSshd = {
    get sshd() {
      return started().sshd;
    },
    get clientKey() {
      return started().clientKey;
    },
    get passwordSkip() {
      return passwordSkip;
    },
    env: () => t.track(makeEnv()),
    track: (e) => {
      envs.push(e);
      return e;
    },
    keyTarget: (extra = {}) => keyTargetOf(started().sshd, started().clientKey, extra),
    async openAccepted(e, target = t.keyTarget(), size = { cols: 80, rows: 24 }) {
      const id = await e.manager.open({ target, ...size });
      const c = new Consumer(e.hub, id);
      const p = await nextPrompt(e, id);
      e.manager.answerHostKey(p.promptId, true);
      await waitState(e, id, 'open');
      return c;
    },
  };

  beforeAll(async () => {
    clientKey = generateEd25519('povdesk-test');
    if (opts.passwordUser) passwordSkip = makeUser(opts.passwordUser.name, opts.passwordUser.password);
    sshd = new Sshd({ password: opts.passwordUser !== undefined && passwordSkip === null });
    sshd.authorize(clientKey.public);
    await sshd.start();
  });
  afterAll(async () => {
    for (const e of envs) e.dispose();
    await sshd?.dispose();
    if (opts.passwordUser && passwordSkip === null) removeUser(opts.passwordUser.name);
  });
  return t;
}
