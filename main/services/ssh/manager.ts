import { randomUUID } from 'node:crypto';
import { AppError } from '../../../shared/contract/errors';
import type { HostKeyPrompt, SshAuth, SshStatus, SshTarget } from '../../../shared/contract/ssh';
import type { Hub } from '../hub';
import type { Logger } from '../log/logger';
import type { SecretStore } from '../secrets/store';
import type { Db } from '../store/db';
import type { TerminalBackend } from './backend';
import { keyTypeOf, sha256Fingerprint } from './fingerprint';
import { KnownHosts } from './known-hosts';
import { readOpensshConfig, type OpensshConfig } from './openssh-config';
import { opensshKeysFor, opensshVerdict } from './openssh-known-hosts';
import { Profiles } from './profiles';
import { TerminalSession, type SessionOptions } from './session';
import { SshBackend, type Hop } from './ssh-backend';
import { typeInto, type TypeOptions, type TypeResult } from './type-into';

export const PROMPT_STREAM = 'ssh.hostKeyPrompt';

export interface ManagerDeps {
  db: Db;
  secrets: SecretStore;
  hub: Hub;
  /**
   * A host key known for host:port from elsewhere (a local attested VM's key from its vm-manager):
   * that key is accepted without a question and any other is refused. Null: ask as usual.
   */
  pretrusted?: (host: string, port: number) => Promise<{ key: Buffer; what: string } | null>;
  /**
   * OpenSSH's known_hosts files, read at each verification (never written): a key they hold for
   * the host is trusted without a question, a different one of the same type is asked about as a
   * changed key, and an @revoked one is refused.
   */
  opensshKnownHosts?: string[];
  /** OpenSSH's client config (~/.ssh/config), read when the profile form asks for its hosts; null: none. */
  opensshConfig?: string | null;
  /**
   * The user's SSH agent for `{kind: 'agent'}` sign-ins, read at each connection: SSH_AUTH_SOCK
   * (on Windows, OpenSSH's agent pipe when unset); null: none.
   */
  agentSocket?: () => string | null;
  /** How long a host-key question waits for an answer before it counts as "no". */
  promptTimeoutMs?: number;
  /** Overrides for tests: backoff, attempts, batching. */
  session?: Partial<SessionOptions>;
  /** The app's log: a terminal's copy of the screen says there once if its fast path is off. */
  log?: Pick<Logger, 'warn'>;
}

interface Pending {
  prompt: HostKeyPrompt;
  key: Buffer;
  resolve: (v: { ok: true } | { ok: false; refusal: string }) => void;
  timer: NodeJS.Timeout;
}

/**
 * Holds every terminal session of the app (the renderer keeps only ids) and the host-key
 * questions waiting for the user.
 */
export class SessionManager {
  readonly knownHosts: KnownHosts;
  readonly profiles: Profiles;
  private readonly sessions = new Map<string, TerminalSession>();
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly deps: ManagerDeps) {
    this.knownHosts = new KnownHosts(deps.db);
    this.profiles = new Profiles(deps.db, deps.secrets);
  }

  /** Resolves credentials now (so a missing key fails the call), then connects in the background. */
  async open(args: { profileId?: string; target?: SshTarget; cols: number; rows: number }): Promise<string> {
    let target: SshTarget;
    let title: string | undefined;
    if (args.profileId) {
      const p = this.profiles.get(args.profileId);
      title = p.name;
      target = {
        host: p.host,
        port: p.port,
        username: p.username,
        auth: { kind: 'profile', profileId: p.id },
        jump: p.jump.map((h) => ({
          host: h.host,
          port: h.port,
          username: h.username,
          ...(h.profileId ? { auth: { kind: 'profile' as const, profileId: h.profileId } } : {}),
        })),
        keepaliveSec: p.keepaliveSec,
        autoReconnect: p.autoReconnect,
      };
    } else if (args.target) {
      target = args.target;
      title = target.title;
    } else {
      throw new AppError('invalid_request', 'ssh.open needs a profileId or a target');
    }
    const hops: Hop[] = [];
    for (const h of target.jump)
      hops.push({ host: h.host, port: h.port, username: h.username, ...(await this.creds(h.auth ?? target.auth)) });
    hops.push({ host: target.host, port: target.port, username: target.username, ...(await this.creds(target.auth)) });
    const id = randomUUID();
    const backend = new SshBackend({
      hops,
      keepaliveSec: target.keepaliveSec,
      verify: (host, port, key) => this.verify(id, host, port, key),
      ...(title ? { title } : {}),
    });
    this.attach(backend, { cols: args.cols, rows: args.rows }, { autoReconnect: target.autoReconnect }, id);
    return id;
  }

  /** Adds any backend (e.g. a local VM's serial console) as a session. */
  attach(
    backend: TerminalBackend,
    size: { cols: number; rows: number },
    opts: Partial<SessionOptions> = {},
    id: string = randomUUID(),
  ): string {
    const log = this.deps.log ? { log: this.deps.log } : {};
    const s = new TerminalSession(id, backend, this.deps.hub, { autoReconnect: true, ...log, ...this.deps.session, ...opts }, size);
    this.sessions.set(id, s);
    void s.start();
    return id;
  }

  private async creds(auth: SshAuth): Promise<Omit<Hop, 'host' | 'port' | 'username'>> {
    if (auth.kind === 'password') return { password: auth.password };
    if (auth.kind === 'privateKey')
      return auth.passphrase ? { privateKey: auth.privateKey, passphrase: auth.passphrase } : { privateKey: auth.privateKey };
    if (auth.kind === 'agent') return this.agent();
    const { agent: useAgent, ...stored } = await this.profiles.credentials(auth.profileId);
    return useAgent ? this.agent() : stored;
  }

  private agent(): { agent: string } {
    const agent = this.deps.agentSocket?.() ?? null;
    if (!agent) {
      throw new AppError(
        'unavailable',
        'no SSH agent: POV Desk was started without SSH_AUTH_SOCK. Start ssh-agent and add your key (ssh-add) in the session POV ' +
          'Desk starts from, or sign in with a key or password',
      );
    }
    return { agent };
  }

  private async verify(sessionId: string, host: string, port: number, key: Buffer): Promise<{ ok: true } | { ok: false; refusal: string }> {
    const trusted = await this.deps.pretrusted?.(host, port).catch(() => null);
    if (trusted) {
      if (trusted.key.equals(key)) return { ok: true };
      return {
        ok: false,
        refusal:
          `host key ${sha256Fingerprint(key)} of ${host}:${port} is not the key of ${trusted.what} ` +
          `(${sha256Fingerprint(trusted.key)}); refused without asking`,
      };
    }
    const v = this.knownHosts.check(host, port, key);
    const openssh = this.deps.opensshKnownHosts?.length
      ? opensshVerdict(opensshKeysFor(this.deps.opensshKnownHosts, host, port), keyTypeOf(key), key.toString('base64'))
      : ({ kind: 'none' } as const);
    if (openssh.kind === 'revoked') {
      return {
        ok: false,
        refusal:
          `host key ${sha256Fingerprint(key)} of ${host}:${port} is marked @revoked in ${openssh.entry.file} ` +
          `line ${openssh.entry.line}; refused without asking`,
      };
    }
    if (v.kind === 'match') return { ok: true };
    if (v.kind === 'unknown' && openssh.kind === 'match') {
      // The SE's own ssh already trusts it: no question, and POV Desk's list shows it from now on.
      this.knownHosts.put(host, port, key);
      return { ok: true };
    }
    // What the question compares against: POV Desk's stored key, else the one OpenSSH holds.
    const stored =
      v.kind === 'changed'
        ? { keyType: v.stored.keyType, fingerprint: v.stored.fingerprint, addedAt: v.stored.addedAt }
        : openssh.kind === 'changed'
          ? {
              keyType: openssh.entry.keyType,
              fingerprint: sha256Fingerprint(Buffer.from(openssh.entry.keyBase64, 'base64')),
              addedAt: openssh.entry.fileChangedAt,
              source: `${openssh.entry.file} line ${openssh.entry.line}`,
            }
          : null;
    const prompt: HostKeyPrompt = {
      promptId: randomUUID(),
      sessionId,
      host: host.toLowerCase(),
      port,
      kind: stored ? 'changed' : 'first',
      keyType: v.presented.keyType,
      fingerprint: v.presented.fingerprint,
      stored,
      state: 'pending',
    };
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => this.settle(prompt.promptId, 'expired', { ok: false, refusal: 'nobody answered the host-key question in time' }),
        this.deps.promptTimeoutMs ?? 5 * 60_000,
      );
      this.pending.set(prompt.promptId, { prompt, key, resolve, timer });
      this.deps.hub.publish(PROMPT_STREAM, '*', prompt);
    });
  }

  private settle(promptId: string, state: 'answered' | 'expired', v: { ok: true } | { ok: false; refusal: string }) {
    const p = this.pending.get(promptId);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(promptId);
    this.deps.hub.publish(PROMPT_STREAM, '*', { ...p.prompt, state });
    p.resolve(v);
  }

  /** The hosts the user's ~/.ssh/config names, read afresh (the SE may have just edited it). */
  opensshHosts(): OpensshConfig | { file: null; hosts: []; problems: [] } {
    const file = this.deps.opensshConfig;
    return file ? readOpensshConfig(file) : { file: null, hosts: [], problems: [] };
  }

  pendingPrompts(): HostKeyPrompt[] {
    return [...this.pending.values()].map((p) => p.prompt);
  }

  answerHostKey(promptId: string, accept: boolean, replace = false): void {
    const p = this.pending.get(promptId);
    if (!p)
      throw new AppError(
        'not_found',
        'that host-key question is no longer open (answered in another window, expired, or the session closed)',
      );
    const { prompt } = p;
    if (!accept) {
      const refusal =
        prompt.kind === 'changed'
          ? `host key CHANGED: stored ${prompt.stored!.fingerprint}, server sent ${prompt.fingerprint}; refused by you`
          : `host key ${prompt.fingerprint} refused by you`;
      return this.settle(promptId, 'answered', { ok: false, refusal });
    }
    if (prompt.kind === 'changed' && !replace) {
      throw new AppError(
        'conflict',
        `the host key of ${prompt.host}:${prompt.port} CHANGED (stored ${prompt.stored!.fingerprint}, now ${prompt.fingerprint}); ` +
          `this can mean someone is intercepting the connection — accept only with replace: true if you know the server was ` +
          `reinstalled`,
      );
    }
    this.knownHosts.put(prompt.host, prompt.port, p.key);
    this.settle(promptId, 'answered', { ok: true });
  }

  get(id: string): TerminalSession {
    const s = this.sessions.get(id);
    if (!s) throw new AppError('not_found', `no terminal session ${JSON.stringify(id)}; it was closed — open a new one`);
    return s;
  }

  /** What a session shows (a reset, its screen and scrollback), for a terminal attaching to it. */
  replay(id: string): Promise<Buffer> {
    return this.get(id).recent();
  }

  list(): SshStatus[] {
    return [...this.sessions.values()].map((s) => s.state);
  }

  input(id: string, data: string): void {
    const s = this.get(id);
    if (!s.backend.interactive) throw new AppError('unsupported', 'this console is read-only; open the interactive console to type');
    if (!s.write(data)) throw new AppError('unavailable', `session is ${s.state.state}; wait for it to connect or press Reconnect`);
  }

  resize(id: string, cols: number, rows: number): void {
    this.get(id).resize(cols, rows);
  }

  close(id: string): void {
    const s = this.get(id);
    for (const p of [...this.pending.values()]) {
      if (p.prompt.sessionId === id) this.settle(p.prompt.promptId, 'expired', { ok: false, refusal: 'the session was closed' });
    }
    s.close();
    this.sessions.delete(id);
  }

  async reconnect(id: string): Promise<void> {
    await this.get(id).reconnect();
  }

  typeInto(id: string, script: string, opts: TypeOptions): Promise<TypeResult> {
    const s = this.get(id);
    if (!s.backend.interactive)
      throw new AppError('unsupported', 'cannot type into a read-only console; open the interactive serial console');
    return typeInto({ write: (d) => s.write(d), observe: (fn) => s.observe(fn) }, script, opts);
  }

  /**
   * The machine woke from sleep (Electron powerMonitor 'resume'): sessions waiting out a backoff
   * retry at once; open ones whose connection died are caught by keepalive and reconnect then.
   */
  wake(): void {
    for (const s of this.sessions.values()) s.retryNow();
  }

  closeAll(): void {
    for (const id of [...this.sessions.keys()]) this.close(id);
  }
}
