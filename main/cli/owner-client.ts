import { connect, type Socket } from 'node:net';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { AppError, wireErrorSchema } from '../../shared/contract';
import { streamKey } from '../../shared/stream-listeners';
import { onLines, type OwnerHello } from '../core/owner-endpoint';
import { ownerFiles, readOwnerToken } from '../core/owner';
import { endpointProblem } from '../core/private-endpoint';

/** What the owner sends on its endpoint; anything else closes the connection (it is still another process). */
const ownerMessage = lazySchema(() =>
  z.discriminatedUnion('t', [
    z.object({ t: z.literal('hello'), conn: z.string().max(100), pid: z.number().int().positive() }).strict(),
    z.object({ t: z.literal('result'), id: z.number().int(), result: z.unknown() }).strict(),
    z.object({ t: z.literal('error'), id: z.number().int(), error: wireErrorSchema }).strict(),
    z
      .object({ t: z.literal('event'), stream: z.string().max(100), key: z.string().max(200), data: z.unknown(), bytes: z.number() })
      .strict(),
  ]),
);

export interface OwnerClient {
  pid: number;
  call(method: string, args: unknown): Promise<unknown>;
  subscribe(stream: string, key: string, fn: (data: unknown) => void): void;
  /** Resolves when the owner goes away. */
  closed: Promise<void>;
  close(): void;
}

/**
 * Connects to the owner of `home`, if one answers. Null when nobody listens (no owner, or one
 * that died: its lock is free then and the caller may take it).
 */
export async function connectOwner(home: string, timeoutMs = 5000): Promise<OwnerClient | null> {
  const token = readOwnerToken(home);
  if (!token) return null;
  const endpoint = ownerFiles(home).endpoint;
  // The token goes only to a socket of this user's, in a directory no other user may write.
  const problem = endpointProblem(endpoint);
  if (problem)
    throw new AppError(
      'forbidden',
      `not sending the owner token to ${endpoint}: ${problem}. Another local user may have put it there; remove it, then start ` +
        `POV Desk again`,
    );
  const sock = await new Promise<Socket | null>((resolve) => {
    const s = connect(endpoint);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
  if (!sock) return null;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const listeners = new Map<string, (data: unknown) => void>();
  let hello: ((h: OwnerHello | null) => void) | null = null;
  const closed = new Promise<void>((resolve) =>
    sock.once('close', () => {
      hello?.(null);
      for (const p of pending.values())
        p.reject(new AppError('unavailable', 'the POV Desk process that owns this data directory stopped during the call'));
      pending.clear();
      resolve();
    }),
  );
  sock.on('error', () => sock.destroy());
  onLines(sock, (line) => {
    let msg;
    try {
      msg = ownerMessage.safeParse(JSON.parse(line));
    } catch {
      return sock.destroy();
    }
    if (!msg.success) return sock.destroy();
    const m = msg.data;
    if (m.t === 'hello') return hello?.(m);
    if (m.t === 'event') return listeners.get(streamKey(m.stream, m.key))?.(m.data);
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.t === 'result') p.resolve(m.result);
    else p.reject(new AppError(m.error.code, m.error.message, m.error.detail));
  });
  const send = (m: unknown) => sock.write(JSON.stringify(m) + '\n');
  send({ t: 'auth', token });
  const h = await new Promise<OwnerHello | null>((resolve) => {
    hello = resolve;
    setTimeout(() => resolve(null), timeoutMs).unref();
  });
  hello = null;
  if (!h) {
    sock.destroy();
    return null;
  }
  let next = 1;
  return {
    pid: h.pid,
    closed,
    call: (method, args) =>
      new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        send({ t: 'call', id, method, args });
      }),
    subscribe(stream, key, fn) {
      listeners.set(streamKey(stream, key), fn);
      send({ t: 'sub', stream, key });
    },
    close: () => sock.destroy(),
  };
}
