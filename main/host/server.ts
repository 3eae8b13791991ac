import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { WebSocket, WebSocketServer } from 'ws';
import { BYTE_STREAMS, BYTES_PATH, BYTES_TOKEN_HEADER, clientMessage, LAUNCH_CODE_HEADER, LAUNCH_PATH, WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX, type ServerMessage } from '../../shared/contract/transport';
import { binaryField, encodeBinaryEvent, LAUNCH_CODE_TTL_MS } from '../../shared/contract/wire';
import { AppError, describeZodError, isStreamName, streams, toWireError } from '../../shared/contract';
import type { Core } from '../core/create';
import { sameSecret } from '../core/owner-endpoint';
import type { Subscriber } from '../core/streams';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { lazyRequire } from '../services/lazy';

const wsLib = lazyRequire<typeof import('ws')>('ws');

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

export interface HostOptions {
  core: Core;
  port?: number;
  host?: string;
  token?: string;
  staticDir: string;
}

export interface Host {
  url: string;
  /** The URL with the launch token in its fragment: what a person opens. */
  openUrl: string;
  /**
   * The URL with a new one-time launch code in its fragment, for handing to another program (an
   * opener's command line is readable by every local user; the token must not be on it).
   */
  launchUrl(): string;
  port: number;
  token: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * Browser mode: the contract over a WebSocket on 127.0.0.1, guarded by a per-launch token carried
 * as a WebSocket subprotocol (so it is in no URL a proxy or log would keep), and by the Origin: a
 * page from any other origin is refused even if it learned the token.
 */
export async function startHost(opts: HostOptions): Promise<Host> {
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const staticRoot = resolve(opts.staticDir);
  const log = opts.core.base.log;
  log.addSecret(token);
  let port = 0;

  // DNS rebinding: a page on a name that later resolves to 127.0.0.1 is same-origin with itself and
  // sends that name as Host. Only the bound address and port are answered.
  const ownHost = (req: IncomingMessage) => req.headers.host === (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
  const allowedOrigins = () => new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]);

  /** Open WebSocket connections by the id their `hello` carried, with the byte streams they read. */
  const conns = new Map<string, { bytes: Map<string, { sub: Subscriber; end: () => void }> }>();

  const serveBytes = (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const refuse = (status: number, why: string) => {
      log.warn('byte stream refused', { why });
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end(why);
    };
    if (req.method !== 'GET') return refuse(405, 'GET only');
    if (!sameSecret(String(req.headers[BYTES_TOKEN_HEADER] ?? ''), token)) return refuse(401, 'missing or wrong token');
    // A page elsewhere cannot send the token header without a CORS preflight we never answer; the
    // fetch metadata and Origin checks say no to it earlier and louder.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return refuse(403, 'foreign origin');
    if (req.headers.origin !== undefined && !allowedOrigins().has(req.headers.origin)) return refuse(403, 'foreign origin');
    const stream = url.searchParams.get('stream') ?? '';
    const key = url.searchParams.get('key') ?? '';
    if (!BYTE_STREAMS.includes(stream) || !isStreamName(stream)) return refuse(400, `not a byte stream: ${JSON.stringify(stream.slice(0, 100))}`);
    if (key.length < 1 || key.length > 200) return refuse(400, 'key must be 1 to 200 characters');
    const conn = conns.get(url.searchParams.get('conn') ?? '');
    if (!conn) return refuse(404, 'no open connection with that id; open the WebSocket first and use its hello');
    const k = `${stream}\u0000${key}`;
    conn.bytes.get(k)?.end();
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
    res.flushHeaders();
    const sub: Subscriber = {
      unacked: new Map(),
      send: (_stream, _key, data) => {
        const bytes = (data as { data?: unknown } | null)?.data;
        if (bytes instanceof Uint8Array && !res.writableEnded) res.write(bytes);
      },
    };
    const unsub = opts.core.base.hub.subscribe(stream, key, sub);
    const entry = { sub, end: () => res.end() };
    conn.bytes.set(k, entry);
    res.on('close', () => {
      unsub();
      if (conn.bytes.get(k) === entry) conn.bytes.delete(k);
    });
  };

  /** One-time launch codes and when each expires (see LAUNCH_PATH). */
  const codes = new Map<string, number>();
  const serveLaunch = (req: IncomingMessage, res: ServerResponse) => {
    const answer = (status: number, body: string, type = 'text/plain; charset=utf-8') =>
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' }).end(body);
    if (req.method !== 'POST') return answer(405, 'POST only');
    const site = req.headers['sec-fetch-site'];
    if ((site !== undefined && site !== 'same-origin') || !allowedOrigins().has(String(req.headers.origin))) {
      log.warn('launch code refused', { why: 'foreign origin' });
      return answer(403, 'foreign origin');
    }
    const code = String(req.headers[LAUNCH_CODE_HEADER] ?? '');
    const expires = codes.get(code);
    codes.delete(code);
    if (expires === undefined || expires < Date.now()) {
      log.warn('launch code refused', { why: expires === undefined ? 'unknown or already used' : 'expired' });
      return answer(403, 'unknown, expired or already used launch code: open the URL `povdesk serve` printed, or start it again with --open');
    }
    answer(200, JSON.stringify({ token }), 'application/json');
  };

  const server = createServer((req, res) => {
    if (!ownHost(req)) {
      log.warn('request refused', { why: 'foreign Host header', host: String(req.headers.host ?? '').slice(0, 100) });
      return void res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('wrong Host');
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === BYTES_PATH) return serveBytes(req, res, url);
    if (url.pathname === LAUNCH_PATH) return serveLaunch(req, res);
    serveStatic(staticRoot, req, res);
  });
  const wss: WebSocketServer = new (wsLib().WebSocketServer)({
    noServer: true,
    maxPayload: 8 * 1024 * 1024,
    handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });

  server.on('upgrade', (req, socket, head) => {
    const refuse = (status: number, why: string) => {
      log.warn('websocket refused', { why, origin: req.headers.origin ?? null });
      socket.write(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\nConnection: close\r\n\r\n`);
      socket.destroy();
    };
    if (!ownHost(req)) return refuse(403, 'foreign Host header');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== WS_PATH) return refuse(403, 'wrong path');
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins().has(origin)) return refuse(403, 'foreign origin');
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim());
    const presented = offered.find((p) => p.startsWith(WS_TOKEN_PREFIX))?.slice(WS_TOKEN_PREFIX.length) ?? '';
    if (!offered.includes(WS_PROTOCOL) || !sameSecret(presented, token)) return refuse(401, 'missing or wrong token');
    wss.handleUpgrade(req, socket, head, (ws) => attach(ws));
  });

  const attach = (ws: WebSocket) => {
    const { dispatcher, base } = opts.core;
    const unsubs = new Map<string, () => void>();
    const send = (m: ServerMessage) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
    };
    const connId = randomBytes(18).toString('base64url');
    const conn = { bytes: new Map<string, { sub: Subscriber; end: () => void }>() };
    conns.set(connId, conn);
    send({ t: 'hello', conn: connId });
    const sub: Subscriber = {
      unacked: new Map(),
      send: (stream, key, data, bytes) => {
        const field = binaryField(data);
        if (field === null) send({ t: 'event', stream, key, data, bytes });
        else if (ws.readyState === ws.OPEN) ws.send(encodeBinaryEvent(stream, key, data as Record<string, unknown>, bytes, field));
        if (isStreamName(stream) && streams[stream].ack === 'auto') base.hub.ack(sub, stream, key, bytes);
      },
    };
    ws.on('message', async (raw) => {
      let msg;
      try {
        msg = clientMessage.safeParse(JSON.parse(String(raw)));
      } catch {
        return ws.close(1007, 'not JSON');
      }
      if (!msg.success) {
        const id = (() => {
          try {
            const v = JSON.parse(String(raw)) as { id?: unknown };
            return typeof v.id === 'number' ? v.id : -1;
          } catch {
            return -1;
          }
        })();
        return send({ t: 'error', id, error: { code: 'invalid_request', message: describeZodError('malformed message', msg.error) } });
      }
      const m = msg.data;
      switch (m.t) {
        case 'call':
          try {
            send({ t: 'result', id: m.id, result: await dispatcher.call(m.method, m.args, { transport: 'ws' }) });
          } catch (err) {
            send({ t: 'error', id: m.id, error: toWireError(err) });
          }
          return;
        case 'sub': {
          if (!isStreamName(m.stream)) return send({ t: 'error', id: -1, error: new AppError('invalid_request', `unknown stream ${m.stream}`).toWire() });
          const k = `${m.stream}\u0000${m.key}`;
          if (!unsubs.has(k)) unsubs.set(k, base.hub.subscribe(m.stream, m.key, sub));
          return;
        }
        case 'unsub': {
          const k = `${m.stream}\u0000${m.key}`;
          unsubs.get(k)?.();
          unsubs.delete(k);
          return;
        }
        case 'ack':
          // Bytes read through BYTES_PATH are acknowledged here, on the connection that opened them.
          base.hub.ack(conn.bytes.get(`${m.stream}\u0000${m.key}`)?.sub ?? sub, m.stream, m.key, m.bytes);
          return;
      }
    });
    ws.on('close', () => {
      for (const u of unsubs.values()) u();
      unsubs.clear();
      conns.delete(connId);
      for (const b of conn.bytes.values()) b.end();
    });
  };

  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? 0, host, () => res());
  });
  port = (server.address() as AddressInfo).port;
  const url = `http://${host}:${port}/`;
  log.info('browser-mode host listening', { url });
  return {
    url,
    openUrl: `${url}#token=${token}`,
    launchUrl: () => {
      const code = randomBytes(24).toString('base64url');
      codes.set(code, Date.now() + LAUNCH_CODE_TTL_MS);
      return `${url}#code=${code}`;
    },
    port,
    token,
    server,
    close: () =>
      new Promise<void>((res) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.close(() => res());
        server.closeAllConnections?.();
      }),
  };
}

function serveStatic(root: string, req: IncomingMessage, res: ServerResponse) {
  const headers = {
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, headers).end();
    return;
  }
  let pathname: string;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  } catch {
    res.writeHead(400, headers).end();
    return;
  }
  if (pathname === '/' || !extname(pathname)) pathname = '/index.html';
  const file = normalize(join(root, pathname));
  if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' }).end('not found');
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream' });
  if (req.method === 'HEAD') return res.end();
  createReadStream(file).pipe(res);
}
