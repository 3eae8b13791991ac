import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { AppError, describeZodError, toWireError } from '../../shared/contract';
import { clientMessage, type ServerMessage } from '../../shared/contract/transport';
import type { Dispatcher } from './dispatch';
import { StreamSession } from './stream-session';
import type { StreamHub } from './streams';
import type { Logger } from '../services/log/logger';
import { ensureEndpointDir } from './private-endpoint';

/**
 * The owner's local endpoint: a Unix socket (0600) in the data directory, or a named pipe on
 * Windows. Newline-delimited JSON with browser mode's message shapes (shared/contract/transport):
 * the client's first line is {"t":"auth","token"} with the token from owner.token (0600); the
 * owner answers {"t":"hello","conn","pid"}; then `call` goes through the same Dispatcher as every
 * transport and `sub` to `jobs.update` streams job snapshots (the only stream served here).
 */

export const OWNER_STREAMS = ['jobs.update'] as const;
const MAX_LINE = 8 * 1024 * 1024;
export const authMessage = lazySchema(() => z.object({ t: z.literal('auth'), token: z.string().max(200) }).strict());
export type OwnerHello = { t: 'hello'; conn: string; pid: number };

export interface OwnerEndpoint {
  path: string;
  /** Connections open now (a `povdesk call` following its job holds one until the job's outcome). */
  clients(): number;
  /** Called whenever a client goes. */
  onClientGone(fn: () => void): void;
  /**
   * From now on new clients are cut off before any call (they retry and reach the next owner);
   * the owner calls it, when no client is connected and no job runs, just before it closes.
   */
  refuseNew(): void;
  close(): Promise<void>;
}

/** Compares two secrets in constant time (browser mode's token check uses it too). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Splits a socket's bytes into lines; a line over MAX_LINE closes the connection. */
export function onLines(sock: Socket, fn: (line: string) => void): void {
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim()) fn(line);
    }
    if (buf.length > MAX_LINE) sock.destroy();
  });
}

export async function startOwnerEndpoint(opts: {
  path: string;
  token: string;
  dispatcher: Dispatcher;
  hub: StreamHub;
  log: Logger;
}): Promise<OwnerEndpoint> {
  const { dispatcher, hub, log } = opts;
  const sockets = new Set<Socket>();
  const gone: (() => void)[] = [];
  let refusing = false;
  // Only in a directory no other user may write (private-endpoint.ts); there, being the lock
  // holder, a socket file left by a killed owner is ours to replace.
  ensureEndpointDir(opts.path);
  if (process.platform !== 'win32') rmSync(opts.path, { force: true });

  const attach = (sock: Socket) => {
    if (refusing) return sock.destroy();
    sockets.add(sock);
    let authed = false;
    const send = (m: ServerMessage | OwnerHello) => {
      if (!sock.destroyed) sock.write(JSON.stringify(m) + '\n');
    };
    // jobs.update acknowledges itself as it is delivered; an `ack` from the client changes nothing.
    const session = new StreamSession(hub, (stream, key, data, bytes) => send({ t: 'event', stream, key, data, bytes }));
    onLines(sock, (line) => {
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        return sock.destroy();
      }
      if (!authed) {
        const a = authMessage.safeParse(raw);
        if (!a.success || !sameSecret(a.data.token, opts.token)) {
          log.warn('owner endpoint refused a client', { why: 'missing or wrong token' });
          return sock.destroy();
        }
        authed = true;
        return send({ t: 'hello', conn: randomBytes(12).toString('base64url'), pid: process.pid });
      }
      const msg = clientMessage.safeParse(raw);
      if (!msg.success) {
        return send({ t: 'error', id: -1, error: { code: 'invalid_request', message: describeZodError('malformed message', msg.error) } });
      }
      const m = msg.data;
      if (m.t === 'call') {
        dispatcher.call(m.method, m.args, { transport: 'cli' }).then(
          (result) => send({ t: 'result', id: m.id, result }),
          (err) => send({ t: 'error', id: m.id, error: toWireError(err) }),
        );
      } else if (m.t === 'sub' && !(OWNER_STREAMS as readonly string[]).includes(m.stream)) {
        return send({
          t: 'error',
          id: -1,
          error: new AppError('unsupported', `stream ${m.stream} is not served on the local endpoint`).toWire(),
        });
      } else if (m.t !== 'ack') {
        session.handle(m);
      }
    });
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      sockets.delete(sock);
      session.close();
      for (const fn of gone) fn();
    });
  };

  const server: Server = createServer(attach);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.path, () => resolve());
  });
  if (process.platform !== 'win32') chmodSync(opts.path, 0o600);
  log.info('owner endpoint listening', { path: opts.path });
  return {
    path: opts.path,
    clients: () => sockets.size,
    onClientGone: (fn) => void gone.push(fn),
    refuseNew: () => void (refusing = true),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
