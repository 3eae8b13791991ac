import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import { describeZodError, isStreamName, toWireError } from '../../shared/contract';
import { BYTE_STREAMS, BYTES_TOKEN_HEADER, clientMessage, type ClientMessage, type ServerMessage } from '../../shared/contract/transport';
import { binaryField, encodeBinaryEvent } from '../../shared/contract/wire';
import { streamKey } from '../../shared/stream-listeners';
import type { Core } from '../core/create';
import { sameSecret } from '../core/owner-endpoint';
import { StreamSession } from '../core/stream-session';
import type { Subscriber } from '../core/streams';
import type { OwnOrigin } from './guards';

/** A byte stream a connection reads through BYTES_PATH: its hub subscriber and how to end it. */
interface ByteReader {
  sub: Subscriber;
  end: () => void;
}

/**
 * The host's open WebSocket connections, by the id their `hello` carried, each with its stream
 * session and the byte streams it reads as HTTP bodies.
 */
export class Connections {
  private readonly open = new Map<string, Map<string, ByteReader>>();

  constructor(
    private readonly core: Core,
    private readonly token: string,
    private readonly origin: OwnOrigin,
  ) {}

  /** Serves one WebSocket: calls through the dispatcher, stream messages through a StreamSession. */
  attach(ws: WebSocket): void {
    const { dispatcher, base } = this.core;
    const send = (m: ServerMessage) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
    };
    const connId = randomBytes(18).toString('base64url');
    const bytes = new Map<string, ByteReader>();
    this.open.set(connId, bytes);
    send({ t: 'hello', conn: connId });
    const session = new StreamSession(
      base.hub,
      (stream, key, data, size) => {
        const field = binaryField(data);
        if (field === null) send({ t: 'event', stream, key, data, bytes: size });
        else if (ws.readyState === ws.OPEN) ws.send(encodeBinaryEvent(stream, key, data as Record<string, unknown>, size, field));
      },
      // Bytes read through BYTES_PATH are acknowledged here, on the connection that opened them.
      { ackTarget: (stream, key) => bytes.get(streamKey(stream, key))?.sub },
    );
    ws.on('message', async (raw) => {
      const msg = parseMessage(raw);
      if ('close' in msg) return ws.close(1007, msg.close);
      if ('error' in msg) return send(msg.error);
      const m = msg.message;
      if (m.t !== 'call') {
        const refused = session.handle(m);
        if (refused) send({ t: 'error', id: -1, error: refused.toWire() });
        return;
      }
      try {
        send({ t: 'result', id: m.id, result: await dispatcher.call(m.method, m.args, { transport: 'ws' }) });
      } catch (err) {
        send({ t: 'error', id: m.id, error: toWireError(err) });
      }
    });
    ws.on('close', () => {
      session.close();
      this.open.delete(connId);
      for (const b of bytes.values()) b.end();
    });
  }

  /** GET BYTES_PATH: one byte stream of an open connection as a plain response body. */
  serveBytes(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const log = this.core.base.log;
    const refuse = (status: number, why: string) => {
      log.warn('byte stream refused', { why });
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end(why);
    };
    if (req.method !== 'GET') return refuse(405, 'GET only');
    if (!sameSecret(String(req.headers[BYTES_TOKEN_HEADER] ?? ''), this.token)) return refuse(401, 'missing or wrong token');
    // A page elsewhere cannot send the token header without a CORS preflight we never answer; the
    // fetch metadata and Origin checks say no to it earlier and louder.
    if (!this.origin.sameSite(req)) return refuse(403, 'foreign origin');
    if (req.headers.origin !== undefined && !this.origin.allows(req.headers.origin)) return refuse(403, 'foreign origin');
    const stream = url.searchParams.get('stream') ?? '';
    const key = url.searchParams.get('key') ?? '';
    if (!BYTE_STREAMS.includes(stream) || !isStreamName(stream))
      return refuse(400, `not a byte stream: ${JSON.stringify(stream.slice(0, 100))}`);
    if (key.length < 1 || key.length > 200) return refuse(400, 'key must be 1 to 200 characters');
    const bytes = this.open.get(url.searchParams.get('conn') ?? '');
    if (!bytes) return refuse(404, 'no open connection with that id; open the WebSocket first and use its hello');
    const k = streamKey(stream, key);
    bytes.get(k)?.end();
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
    res.flushHeaders();
    const sub: Subscriber = {
      unacked: new Map(),
      send: (_stream, _key, data) => {
        const chunk = (data as { data?: unknown } | null)?.data;
        if (chunk instanceof Uint8Array && !res.writableEnded) res.write(chunk);
      },
    };
    const unsub = this.core.base.hub.subscribe(stream, key, sub);
    const entry = { sub, end: () => res.end() };
    bytes.set(k, entry);
    res.on('close', () => {
      unsub();
      if (bytes.get(k) === entry) bytes.delete(k);
    });
  }
}

type Parsed = { message: ClientMessage } | { error: ServerMessage } | { close: string };

/** One WebSocket message: a client message, an error to answer (with the call's id if it had one), or a reason to close. */
function parseMessage(raw: unknown): Parsed {
  let json: unknown;
  try {
    json = JSON.parse(String(raw));
  } catch {
    return { close: 'not JSON' };
  }
  const msg = clientMessage.safeParse(json);
  if (msg.success) return { message: msg.data };
  const id = typeof (json as { id?: unknown } | null)?.id === 'number' ? (json as { id: number }).id : -1;
  return { error: { t: 'error', id, error: { code: 'invalid_request', message: describeZodError('malformed message', msg.error) } } };
}
