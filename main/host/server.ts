import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { BYTES_PATH, LAUNCH_PATH, WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/transport';
import type { Core } from '../core/create';
import { sameSecret } from '../core/owner-endpoint';
import { CONTENT_SECURITY_POLICY } from '../../shared/csp';
import { lazyRequire } from '../services/lazy';
import type { Logger } from '../services/log/logger';
import { Connections } from './connections';
import { LaunchCodes, OwnOrigin } from './guards';

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
  const log = opts.core.base.log;
  log.addSecret(token);
  const origin = new OwnOrigin(host);
  const codes = new LaunchCodes(token, origin, log);
  const conns = new Connections(opts.core, token, origin);
  const staticRoot = resolve(opts.staticDir);

  const server = createServer((req, res) => {
    if (!origin.isOwnHost(req)) {
      log.warn('request refused', { why: 'foreign Host header', host: String(req.headers.host ?? '').slice(0, 100) });
      return void res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('wrong Host');
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === BYTES_PATH) return conns.serveBytes(req, res, url);
    if (url.pathname === LAUNCH_PATH) return codes.serve(req, res);
    serveStatic(staticRoot, req, res);
  });
  const wss = acceptWebSockets(server, { token, origin, log, attach: (ws) => conns.attach(ws) });

  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? 0, host, () => res());
  });
  const port = (origin.port = (server.address() as AddressInfo).port);
  const url = `http://${host}:${port}/`;
  log.info('browser-mode host listening', { url });
  return {
    url,
    openUrl: `${url}#token=${token}`,
    launchUrl: () => {
      const code = randomBytes(24).toString('base64url');
      codes.add(code);
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

/** Upgrades requests for WS_PATH that carry the protocol and the token, from the host's own origin. */
function acceptWebSockets(
  server: Server,
  o: { token: string; origin: OwnOrigin; log: Logger; attach: (ws: WebSocket) => void },
): WebSocketServer {
  const wss: WebSocketServer = new (wsLib().WebSocketServer)({
    noServer: true,
    maxPayload: 8 * 1024 * 1024,
    handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (status: number, why: string) => {
      o.log.warn('websocket refused', { why, origin: req.headers.origin ?? null });
      socket.write(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\nConnection: close\r\n\r\n`);
      socket.destroy();
    };
    if (!o.origin.isOwnHost(req)) return refuse(403, 'foreign Host header');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== WS_PATH) return refuse(403, 'wrong path');
    if (req.headers.origin !== undefined && !o.origin.allows(req.headers.origin)) return refuse(403, 'foreign origin');
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim());
    const presented = offered.find((p) => p.startsWith(WS_TOKEN_PREFIX))?.slice(WS_TOKEN_PREFIX.length) ?? '';
    if (!offered.includes(WS_PROTOCOL) || !sameSecret(presented, o.token)) return refuse(401, 'missing or wrong token');
    wss.handleUpgrade(req, socket, head, (ws) => o.attach(ws));
  });
  return wss;
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
