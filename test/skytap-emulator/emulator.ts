/**
 * A Skytap REST API emulator on 127.0.0.1 (node:http, port 0 by default) implementing, from the
 * documented behaviour, every endpoint POV Desk uses. See docs/skytap.md for the behaviours and
 * faults.ts for the fault script. This file is the server: each request recorded, checked for
 * credentials and answered by ./routes (./sharing for portals and schedules), with the fault that
 * matches it applied; ./admin's endpoints under /__emulator/ (no auth) let another process (the
 * e2e host, a shell) script faults and read the request log; ./http is the reply plumbing.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admin } from './admin';
import { FaultScript, matches } from './faults';
import { decodeBasic, describeFault, error, faultReply, readBody, send, sleep, type HttpReply, type RequestRecord } from './http';
import { SkytapRoutes, type Breaks } from './routes';
import { SharingState } from './sharing';
import { EmulatorState, type Credentials, type Timing } from './state';

export type { RequestRecord } from './http';
export { USER_DATA_MAX, type Breaks } from './routes';

export interface EmulatorOptions {
  port?: number;
  credentials?: Credentials;
  timing?: Partial<Timing>;
  now?: () => number;
  pageLatencyMs?: number;
  /** Fill the state before serving (see seed.ts). */
  seed?: (state: EmulatorState) => void;
}

export interface Emulator {
  url: string;
  breaks: Breaks;
  port: number;
  state: EmulatorState;
  faults: FaultScript;
  /** Sharing portals and schedules (sharing.ts). */
  sharing: SharingState;
  requests: RequestRecord[];
  /** Requests whose method and normalised path match (same syntax as a fault's match). */
  count(match: string): number;
  close(): Promise<void>;
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const state = new EmulatorState({
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    ...(opts.timing ? { timing: opts.timing } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  });
  state.pageLatencyMs = opts.pageLatencyMs ?? 0;
  opts.seed?.(state);
  const faults = new FaultScript();
  const sharing = new SharingState(state);
  state.envJsonExtra = (env, url) => {
    const portals = sharing.envPortals(env, url);
    return { publish_sets: portals, publish_set_count: portals.length, suspend_on_idle: sharing.suspendOnIdle.get(env.id) ?? null };
  };
  const requests: RequestRecord[] = [];
  const breaks: Breaks = { paging: false, scheduleShape: false };
  let baseUrl = '';
  const routes = new SkytapRoutes(state, sharing, breaks, () => baseUrl);
  const adminParts = { state, sharing, faults, requests, routes, url: () => baseUrl };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ errors: [`emulator bug: ${String(err)}`] }));
      }
    });
  });
  server.keepAliveTimeout = 5_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    const path = u.pathname;
    const query = Object.fromEntries(u.searchParams.entries());
    const raw = await readBody(req);

    if (path.startsWith('/__emulator/')) return admin(adminParts, method, path, raw, res);

    let body: unknown = undefined;
    let bodyError: string | null = null;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        bodyError = 'The request body is not valid JSON';
      }
    }
    const auth = decodeBasic(req.headers.authorization);
    const record: RequestRecord = {
      method,
      path,
      query,
      auth,
      body,
      status: 0,
      at: Date.now(),
      ms: 0,
      conn: req.socket.remotePort ?? 0,
      fault: null,
    };
    const started = performance.now();
    res.once('finish', () => (record.ms = performance.now() - started));
    requests.push(record);

    const fault = faults.take(method, path);
    if (fault) record.fault = describeFault(fault);
    if (fault?.delayMs) await sleep(fault.delayMs);
    if (fault?.holdUntil) await fault.holdUntil.catch(() => undefined);

    if (fault?.kind === 'hang') {
      record.status = -1;
      return; // never answered; closed by close()
    }
    if (fault?.kind === 'reset' && !fault.afterHandling) {
      record.status = -1;
      req.socket.destroy();
      return;
    }
    if (fault && fault.status !== undefined && !fault.afterHandling) {
      return send(res, record, faultReply(fault));
    }

    let reply: HttpReply;
    if (!auth || auth.username !== state.credentials.username || auth.token !== state.credentials.token) {
      reply = error(401, 'Unauthorized: the username or API token is wrong');
    } else if (bodyError) {
      reply = error(400, bodyError);
    } else {
      reply = await routes.route(method, path, query, body, fault);
    }
    if (fault?.replyDelayMs) await sleep(fault.replyDelayMs);

    if (fault?.afterHandling) {
      if (fault.kind === 'reset') {
        record.status = -1;
        req.socket.destroy();
        return;
      }
      if (fault.status !== undefined) return send(res, record, faultReply(fault));
    }
    if (fault?.kind === 'malformed') {
      record.status = 200;
      const text = '{"id": "1", "name": "half an obj';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      res.end(text);
      return;
    }
    if (fault?.kind === 'truncated') {
      const text = Buffer.from(JSON.stringify(reply.body ?? {}));
      record.status = reply.status;
      res.writeHead(reply.status, { ...reply.headers, 'content-type': 'application/json', 'content-length': String(text.length) });
      res.write(text.subarray(0, Math.floor(text.length / 2)), () => res.destroy());
      return;
    }
    return send(res, record, reply);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://127.0.0.1:${port}`;

  return {
    url: baseUrl,
    port,
    state,
    faults,
    sharing,
    requests,
    breaks,
    count(match: string): number {
      return requests.filter((r) => matchesRecord(match, r)).length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function matchesRecord(match: string, r: RequestRecord): boolean {
  return matches(match, r.method, r.path);
}
