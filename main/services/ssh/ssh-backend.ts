import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { lazyRequire } from '../lazy';
import type { Duplex } from 'node:stream';
import { BackendError, type TerminalBackend, type TerminalSink } from './backend';

const ssh2 = lazyRequire<typeof import('ssh2')>('ssh2');

export interface Hop {
  host: string;
  port: number;
  username: string;
  password?: string;
  privateKey?: string;
  passphrase?: string;
  /** The SSH agent's socket (or Windows pipe): it signs with the keys it holds. */
  agent?: string;
}

/**
 * Decides whether to trust `key` for host:port. Resolves true/false; may wait for the user — the
 * SSH handshake (and so authentication) is held until it resolves. `refusal` says why on false.
 */
export type HostVerifier = (host: string, port: number, key: Buffer) => Promise<{ ok: true } | { ok: false; refusal: string }>;

export interface SshBackendOptions {
  /** Jump hosts first, the target last. */
  hops: Hop[];
  verify: HostVerifier;
  keepaliveSec: number;
  readyTimeoutMs?: number;
  title?: string;
}

/**
 * ssh2's channel is a Readable with a 2 MB highWaterMark, and ssh2 keeps granting window to the
 * server until that buffer is full: a paused channel went on taking 2 MB into memory and then the
 * rest of its 2 MB window, ~4 MB that all scrolled past after Ctrl-C. With this mark ssh2 stops
 * granting as soon as a paused channel holds 64 KB, so what a pause leaves in flight is that plus
 * the window already granted (≤ 2 MB, ssh2's fixed size). Flowing, the mark changes nothing: data
 * is handed on as it arrives (docs/ssh.md, "Flow control").
 */
export const PAUSED_READ_BUFFER = 64 * 1024;
/** ssh2's channel window (its MAX_WINDOW; not configurable): what the server may send unasked. */
export const SSH2_WINDOW = 2 * 1024 * 1024;

function limitReadBuffer(r: import('node:stream').Readable) {
  // No public setter; the field has been on every Readable's state since Node 0.10.
  (r as unknown as { _readableState: { highWaterMark: number } })._readableState.highWaterMark = PAUSED_READ_BUFFER;
}

const where = (h: Hop) => `${h.username}@${h.host}:${h.port}`;

/** An interactive shell over SSH, through zero or more jump hosts (each verified on its own name). */
export class SshBackend implements TerminalBackend {
  readonly interactive = true;
  readonly title: string;
  private clients: Client[] = [];
  private stream: ClientChannel | null = null;
  private closing = false;
  /** Bumped by every open/close: events of an older connection are ignored. */
  private seq = 0;

  constructor(private readonly opts: SshBackendOptions) {
    if (opts.hops.length === 0) throw new Error('SshBackend needs at least one hop');
    const target = opts.hops[opts.hops.length - 1]!;
    this.title = opts.title ?? `${target.username}@${target.host}${target.port === 22 ? '' : ':' + target.port}`;
  }

  async open(sink: TerminalSink, size: { cols: number; rows: number }): Promise<void> {
    this.teardown();
    this.closing = false;
    const mine = ++this.seq;
    const clients: Client[] = [];
    this.clients = clients;
    let sock: Duplex | undefined;
    try {
      const hops = this.opts.hops;
      for (let i = 0; i < hops.length; i++) {
        sink.phase('connecting');
        const c = await this.connectOne(hops[i]!, sock, sink, clients);
        if (i < hops.length - 1) sock = await forward(c, hops[i]!, hops[i + 1]!);
      }
      const last = clients[clients.length - 1]!;
      const stream = await new Promise<ClientChannel>((resolve, reject) =>
        last.shell({ term: 'xterm-256color', cols: size.cols, rows: size.rows }, (err, s) => (err ? reject(err) : resolve(s))),
      );
      this.stream = stream;
      limitReadBuffer(stream);
      limitReadBuffer(stream.stderr);
      let exit: string | null = null;
      let dropReason: string | null = null;
      let done = false;
      const end = () => {
        if (done || this.closing || mine !== this.seq) return;
        done = true;
        this.teardown();
        if (exit !== null) sink.ended({ closedBy: 'exited', reason: exit });
        else
          sink.ended({
            closedBy: 'dropped',
            reason: dropReason ?? `connection to ${where(this.opts.hops[this.opts.hops.length - 1]!)} was lost`,
          });
      };
      stream.on('data', (d: Buffer) => sink.data(d));
      stream.stderr.on('data', (d: Buffer) => sink.data(d));
      stream.on('exit', (code: number | null, signal?: string) => {
        exit = signal ? `the remote shell ended by signal ${signal}` : `the remote shell exited with code ${code ?? '?'}`;
      });
      stream.on('close', end);
      for (const [i, c] of clients.entries()) {
        c.on('error', (e: Error) => {
          dropReason = `${i < clients.length - 1 ? 'jump host ' : ''}${where(this.opts.hops[i]!)}: ${describe(e)}`;
        });
        c.on('close', () => setImmediate(end));
      }
    } catch (err) {
      this.teardown();
      throw err instanceof BackendError ? err : new BackendError('failed', describe(err as Error), true);
    }
  }

  private connectOne(hop: Hop, sock: Duplex | undefined, sink: TerminalSink, clients: Client[]): Promise<Client> {
    return new Promise<Client>((resolve, reject) => {
      const c = new (ssh2().Client)();
      clients.push(c);
      let refusal: string | null = null;
      let settled = false;
      const fail = (e: BackendError) => {
        if (settled) return;
        settled = true;
        reject(e);
      };
      const cfg: ConnectConfig = {
        host: hop.host,
        port: hop.port,
        username: hop.username,
        readyTimeout: this.opts.readyTimeoutMs ?? 20_000,
        keepaliveInterval: this.opts.keepaliveSec * 1000,
        keepaliveCountMax: 3,
        agentForward: false,
        // Servers that check passwords through PAM offer only keyboard-interactive: answer its
        // password prompt with the password, and nothing else.
        tryKeyboard: !!hop.password,
        hostVerifier: (key: Buffer, verify: (ok: boolean) => void) => {
          sink.phase('verifying');
          this.opts
            .verify(hop.host, hop.port, key)
            .then((v) => {
              if (v.ok) sink.phase('authenticating');
              else refusal = v.refusal;
              verify(v.ok);
            })
            .catch((e: Error) => {
              refusal = `host key check failed: ${e.message}`;
              verify(false);
            });
        },
      };
      if (sock) cfg.sock = sock;
      if (hop.privateKey) cfg.privateKey = hop.privateKey;
      if (hop.passphrase) cfg.passphrase = hop.passphrase;
      if (hop.password) cfg.password = hop.password;
      if (hop.agent) cfg.agent = hop.agent;
      c.on('keyboard-interactive', (_name, _instructions, _lang, prompts, finish) => {
        finish(prompts.map((p) => (hop.password && /password|passcode/i.test(p.prompt) ? hop.password : '')));
      });
      c.once('ready', () => {
        settled = true;
        resolve(c);
      });
      c.on('error', (e: Error & { level?: string }) => {
        if (refusal) return fail(new BackendError('refused', `${where(hop)}: ${refusal}`, false));
        if (e.level === 'client-authentication') {
          const why = hop.agent
            ? 'the server accepted none of the keys the SSH agent holds (`ssh-add -l` lists them); ' +
              "check the user name, and that one of them is in the server's authorized_keys"
            : `the server did not accept the ${hop.privateKey ? 'key' : 'password'}; ` +
              "check the user name and credentials (a generated key must be in the server's authorized_keys)";
          return fail(new BackendError('failed', `authentication failed for ${where(hop)}: ${why}`, false));
        }
        fail(new BackendError('failed', `${where(hop)}: ${describe(e)}`, true));
      });
      c.on('close', () =>
        fail(
          new BackendError(
            refusal ? 'refused' : 'failed',
            `${where(hop)}: ${refusal ?? 'the connection closed during the handshake'}`,
            !refusal,
          ),
        ),
      );
      c.connect(cfg);
    });
  }

  write(data: string | Buffer): void {
    this.stream?.write(data);
  }

  resize(cols: number, rows: number): void {
    this.stream?.setWindow(rows, cols, 0, 0);
  }

  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }

  held(): number {
    const s = this.stream;
    return s ? s.readableLength + s.stderr.readableLength : 0;
  }

  close(): void {
    this.closing = true;
    this.seq++;
    this.teardown();
  }

  private teardown() {
    const s = this.stream;
    this.stream = null;
    try {
      s?.close();
    } catch {
      /* already closed */
    }
    for (const c of this.clients.reverse()) c.end();
    this.clients = [];
  }
}

function forward(c: Client, from: Hop, to: Hop): Promise<Duplex> {
  return new Promise((resolve, reject) =>
    c.forwardOut('127.0.0.1', 0, to.host, to.port, (err, stream) =>
      err
        ? reject(new BackendError('failed', `jump host ${where(from)} could not reach ${to.host}:${to.port}: ${err.message}`, true))
        : resolve(stream),
    ),
  );
}

function describe(e: Error & { code?: string }): string {
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is sshd running and the port right?)';
    case 'ENOTFOUND':
      return 'host name not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case 'ECONNRESET':
      return 'connection reset by the server';
    case 'EHOSTUNREACH':
      return 'host unreachable';
  }
  if (/Keepalive timeout/i.test(e.message)) return 'no answer to keepalives (network gone or laptop slept)';
  if (/Timed out while waiting for handshake/i.test(e.message)) return 'timed out waiting for the SSH handshake';
  return e.message;
}
