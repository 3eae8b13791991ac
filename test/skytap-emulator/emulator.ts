import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BUSY_MESSAGE, FaultScript, matches, type Fault } from './faults';
import { applySeed } from './seed';
import { SharingState } from './sharing';
import { EmulatorState, type Credentials, type EmuEnv, type Timing } from './state';

/**
 * A Skytap REST API emulator on 127.0.0.1 (node:http, port 0 by default) implementing, from the
 * documented behaviour, every endpoint POV Desk uses. See docs/skytap.md for the behaviours and
 * faults.ts for the fault script. Admin endpoints under /__emulator/ (no auth) let another
 * process (the e2e host, a shell) script faults and read the request log.
 */

export interface RequestRecord {
  method: string;
  /** The path as sent (with any .json suffix). */
  path: string;
  query: Record<string, string>;
  /** Decoded Basic credentials, or null when absent/unreadable. */
  auth: { username: string; token: string } | null;
  body: unknown;
  status: number;
  at: number;
  /** The client's source port: requests on one keep-alive connection share it. */
  conn: number;
  /** Time the emulator spent on the request, from arrival to the reply written (its latency included). */
  ms: number;
  fault: string | null;
}

export interface EmulatorOptions {
  port?: number;
  credentials?: Credentials;
  timing?: Partial<Timing>;
  now?: () => number;
  pageLatencyMs?: number;
  /** Fill the state before serving (see seed.ts). */
  seed?: (state: EmulatorState) => void;
}

/**
 * Switches that break one documented assumption each, for `povdesk doctor`'s tests (docs/skytap.md,
 * docs/share.md): a catalogue that ignores count/offset and sends no Content-Range; schedules whose
 * environment field has another name.
 */
export interface Breaks {
  paging: boolean;
  scheduleShape: boolean;
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

export const USER_DATA_MAX = 16384;
const MAX_BODY = 1024 * 1024;

class HttpReply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

function error(status: number, message: string, headers: Record<string, string> = {}): HttpReply {
  return new HttpReply(status, status === 401 || status === 404 ? { error: message } : { errors: [message] }, headers);
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

    if (path.startsWith('/__emulator/')) return admin(method, path, raw, res);

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
      reply = await route(method, path, query, body, fault);
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

  async function route(
    method: string,
    path: string,
    query: Record<string, string>,
    body: unknown,
    fault: Fault | null,
  ): Promise<HttpReply> {
    const p = path
      .replace(/\.json$/, '')
      .replace(/^\/v1\//, '/')
      .replace(/\/+$/, '');
    const seg = p.split('/').slice(1);
    const v2 = seg[0] === 'v2';
    const s = v2 ? seg.slice(1) : seg;

    const shared = sharing.route(method, s, body, baseUrl);
    const renamed = (x: unknown) => {
      if (!breaks.scheduleShape || s[0] !== 'schedules') return x;
      const { configuration_id: env, ...rest } = x as Record<string, unknown>;
      return { ...rest, environment_id: env };
    };
    if (shared) return 'page' in shared ? page(shared.page, renamed, query, fault) : new HttpReply(shared.status, shared.body);

    if (method === 'GET') {
      // /v2/templates[/{id}]
      if (s[0] === 'templates' && s.length === 1) {
        return page([...state.templates.values()], (t) => state.templateJson(t, baseUrl), query, fault);
      }
      if (s[0] === 'templates' && s.length === 2) {
        const t = state.templates.get(s[1]!);
        return t ? new HttpReply(200, state.templateJson(t, baseUrl)) : error(404, `Template ${s[1]} not found`);
      }
      // /v2/projects/{id}/templates|configurations
      if (s[0] === 'projects' && s.length === 3 && (s[2] === 'templates' || s[2] === 'configurations')) {
        const pid = s[1]!;
        if (!state.projects.has(pid)) return error(404, `Project ${pid} not found`);
        if (s[2] === 'templates') {
          const items = [...state.templates.values()].filter((t) => t.projects.has(pid));
          return page(items, (t) => state.templateJson(t, baseUrl), query, fault);
        }
        const envs = liveEnvs().filter((e) => e.projects.has(pid));
        return page(envs, (e) => state.envJson(e, baseUrl), query, fault);
      }
      if (s[0] === 'configurations' && s.length === 1) {
        return page(liveEnvs(), (e) => state.envJson(e, baseUrl), query, fault);
      }
      if (s[0] === 'configurations' && s.length >= 2) {
        const env = state.settle(s[1]!);
        if (!env) return error(404, `Environment ${s[1]} not found`);
        if (s.length === 2) return new HttpReply(200, state.envJson(env, baseUrl));
        if (s[2] === 'vms' && s.length === 3) return page(env.vms, (vm) => state.vmJson(env, vm, baseUrl), query, fault);
        const vm = s[2] === 'vms' ? env.vms.find((v) => v.id === s[3]) : undefined;
        if (!vm) return error(404, `VM ${s[3] ?? ''} not found`);
        if (s.length === 4) return new HttpReply(200, state.vmJson(env, vm, baseUrl));
        if (s.length === 5 && s[4] === 'user_data') return new HttpReply(200, { contents: vm.userData });
        if (s.length === 7 && s[4] === 'interfaces' && s[6] === 'services') {
          if (s[5] !== state.nicId(env, vm)) return error(404, `Interface ${s[5]} not found`);
          return new HttpReply(
            200,
            vm.services.map((x) => state.serviceJson(x)),
          );
        }
      }
      return error(404, `No route GET ${path}`);
    }

    if (method === 'POST' && s[0] === 'configurations' && s.length === 1) {
      const b = asObject(body);
      const templateId = b?.template_id;
      if (typeof templateId !== 'string' || templateId === '') return error(422, 'Template id is required');
      const tpl = state.templates.get(templateId);
      if (!tpl) return error(404, `Template ${templateId} not found`);
      if (tpl.busy) return error(423, 'The template is busy. Try again later.', { 'retry-after': String(state.busyRetryAfterSec) });
      const name = b?.name === undefined ? tpl.name : b.name;
      if (typeof name !== 'string') return error(422, 'Name must be a string');
      if (name.length > 255) return error(422, 'Name is too long (maximum is 255 characters)');
      let projectId: string | null = null;
      if (b?.project_id !== undefined && b.project_id !== null) {
        projectId = String(b.project_id);
        if (!state.projects.has(projectId)) return error(422, `Project ${projectId} does not exist`);
      }
      const env = state.createFromTemplate(tpl, name, projectId);
      if (fault?.kind === 'stayBusy') env.stuckBusy = true;
      if (fault?.hideMs) hiddenUntil.set(env.id, Date.now() + fault.hideMs);
      return new HttpReply(200, state.envJson(env, baseUrl));
    }

    // Published services: POST …/vms/{vid}/interfaces/{nic}/services {internal_port}, DELETE …/services/{id}
    if (
      (method === 'POST' || method === 'DELETE') &&
      s[0] === 'configurations' &&
      s[2] === 'vms' &&
      s[4] === 'interfaces' &&
      s[6] === 'services'
    ) {
      const env = state.settle(s[1]!);
      if (!env) return error(404, `Environment ${s[1]} not found`);
      const vm = env.vms.find((v) => v.id === s[3]);
      if (!vm) return error(404, `VM ${s[3]} not found`);
      if (s[5] !== state.nicId(env, vm)) return error(404, `Interface ${s[5]} not found`);
      if (state.isBusy(env))
        return error(423, 'The environment is busy. Try again later.', { 'retry-after': String(state.busyRetryAfterSec) });
      if (method === 'POST' && s.length === 7) {
        const port = asObject(body)?.internal_port;
        if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
          return error(422, 'Internal port must be an integer from 1 to 65535');
        if (vm.services.some((x) => x.internalPort === port)) return error(422, `Port ${port} is already published`);
        const svc = state.newService(port, env.region);
        vm.services.push(svc);
        return new HttpReply(200, state.serviceJson(svc));
      }
      if (method === 'DELETE' && s.length === 8) {
        const i = vm.services.findIndex((x) => x.id === s[7]);
        if (i < 0) return error(404, `Service ${s[7]} not found`);
        vm.services.splice(i, 1);
        return new HttpReply(200, undefined);
      }
    }

    if ((method === 'PUT' || method === 'DELETE') && s[0] === 'configurations' && s.length >= 2) {
      const env = state.settle(s[1]!);
      if (!env) return error(404, `Environment ${s[1]} not found`);

      if (method === 'DELETE' && s.length === 2) {
        if (state.isBusy(env)) {
          return error(423, 'The environment is busy. Try again later.', { 'retry-after': String(state.busyRetryAfterSec) });
        }
        state.beginDelete(env);
        if (fault?.kind === 'stayBusy') env.stuckBusy = true;
        return new HttpReply(200, undefined);
      }
      if (method === 'PUT' && s.length === 2) {
        const b = asObject(body);
        if (!b) return error(422, 'Expected a JSON object');
        if (b.name !== undefined) {
          if (typeof b.name !== 'string' || b.name.length > 255) return error(422, 'Name is invalid');
        }
        if (b.runstate !== undefined) {
          if (!['running', 'suspended', 'stopped', 'halted'].includes(String(b.runstate))) {
            return error(422, `Runstate ${JSON.stringify(b.runstate)} is not one of running, suspended, stopped, halted`);
          }
          if (state.isBusy(env) || env.queued) return error(422, BUSY_MESSAGE);
          state.beginRunstate(env, b.runstate as 'running', { rateLimited: fault?.kind === 'rateLimited' });
          if (fault?.kind === 'stayBusy') env.stuckBusy = true;
        }
        if (typeof b.name === 'string') env.name = b.name;
        return new HttpReply(200, state.envJson(env, baseUrl));
      }
      if (method === 'PUT' && s.length === 5 && s[2] === 'vms' && s[4] === 'user_data') {
        const vm = env.vms.find((v) => v.id === s[3]);
        if (!vm) return error(404, `VM ${s[3]} not found`);
        const b = asObject(body);
        if (!b || typeof b.contents !== 'string') return error(422, 'Contents must be a string');
        if (b.contents.length > USER_DATA_MAX) return error(422, 'Contents is too long (maximum is 16384 characters)');
        if (state.isBusy(env)) return error(422, BUSY_MESSAGE);
        vm.userData = b.contents;
        return new HttpReply(200, { contents: vm.userData });
      }
    }
    return error(404, `No route ${method} ${path}`);
  }

  /** Environments left out of listings until a time (fault hideMs): a listing lagging behind a create. */
  const hiddenUntil = new Map<string, number>();
  function liveEnvs(): EmuEnv[] {
    const now = Date.now();
    return state
      .environmentIds()
      .filter((id) => (hiddenUntil.get(id) ?? 0) <= now)
      .map((id) => state.environments.get(id)!);
  }

  async function page<T>(all: T[], view: (item: T) => unknown, query: Record<string, string>, fault: Fault | null): Promise<HttpReply> {
    const count = query.count === undefined ? 100 : Number(query.count);
    const offset = query.offset === undefined ? 0 : Number(query.offset);
    if (!Number.isInteger(count) || count < 1 || !Number.isInteger(offset) || offset < 0) {
      return error(422, 'count and offset must be non-negative integers');
    }
    if (state.pageLatencyMs > 0) await sleep(state.pageLatencyMs);
    if (breaks.paging) return new HttpReply(200, all.map(view));
    const size = Math.min(count, 100);
    let items = all.slice(offset, offset + size).map(view);
    const range = items.length ? `items ${offset}-${offset + items.length - 1}/${all.length}` : `items */${all.length}`;
    if (fault?.kind === 'shortPage' && items.length) items = items.slice(0, -1);
    return new HttpReply(200, items, { 'content-range': range });
  }

  function admin(method: string, path: string, raw: Buffer, res: ServerResponse): void {
    const reply = (status: number, body: unknown): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      res.end(text);
    };
    try {
      const body = raw.length ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
      if (path === '/__emulator/faults' && method === 'POST') {
        const list = Array.isArray(body) ? body : [body];
        for (const f of list) {
          if (typeof (f as Fault).match !== 'string') throw new Error('fault.match must be a string over HTTP');
          if ((f as { times?: unknown }).times === 'Infinity' || (f as { times?: unknown }).times === null) (f as Fault).times = Infinity;
          faults.push(f as Fault);
        }
        return reply(200, { pending: faults.remaining().length });
      }
      if (path === '/__emulator/faults' && method === 'DELETE') {
        faults.clear();
        return reply(200, { pending: 0 });
      }
      if (path === '/__emulator/requests' && method === 'GET') return reply(200, requests);
      if (path === '/__emulator/requests' && method === 'DELETE') {
        requests.length = 0;
        return reply(200, { ok: true });
      }
      if (path === '/__emulator/state' && method === 'GET') {
        return reply(200, {
          templates: [...state.templates.values()].map((t) => state.templateJson(t, baseUrl)),
          environments: liveEnvs().map((e) => ({ ...state.envJson(e, baseUrl), projects: [...e.projects] })),
          projects: [...state.projects],
        });
      }
      if (path === '/__emulator/reset' && method === 'POST') {
        // Back to a seed (default demo) with no faults and an empty request log.
        state.clear();
        sharing.clear();
        applySeed(state, typeof body.seed === 'string' ? body.seed : 'demo');
        faults.clear();
        requests.length = 0;
        return reply(200, { templates: state.templates.size, environments: state.environments.size });
      }
      if (path === '/__emulator/stay-busy' && method === 'POST') {
        state.stayBusy(String(body.id), body.on !== false);
        return reply(200, { ok: true });
      }
      if (path === '/__emulator/clock' && method === 'POST') {
        // Moves the emulator's clock (schedules end; see sharing.ts).
        if (typeof body.advanceMs !== 'number' || body.advanceMs < 0) throw new Error('advanceMs must be a non-negative number');
        state.advance(body.advanceMs);
        sharing.tick();
        return reply(200, { now: new Date(state.now()).toISOString() });
      }
      if (path === '/__emulator/sharing' && method === 'POST') {
        if (typeof body.portalsDisabled === 'boolean') sharing.portalsDisabled = body.portalsDisabled;
        return reply(200, { portalsDisabled: sharing.portalsDisabled });
      }
      if (path === '/__emulator/sharing' && method === 'GET') {
        sharing.tick();
        return reply(200, {
          portals: [...sharing.portals.values()].map((p) => sharing.portalJson(p, baseUrl)),
          schedules: [...sharing.schedules.values()].map((x) => sharing.scheduleJson(x)),
          passwordsReceived: sharing.passwordsReceived.length,
        });
      }
      if (path === '/__emulator/timing' && method === 'POST') {
        for (const k of ['createBusyMs', 'runstateBusyMs', 'deleteMs', 'rateLimitedMs'] as const) {
          if (typeof body[k] === 'number') state.timing[k] = body[k];
        }
        if (typeof body.pageLatencyMs === 'number') state.pageLatencyMs = body.pageLatencyMs;
        return reply(200, { timing: state.timing, pageLatencyMs: state.pageLatencyMs });
      }
      return reply(404, { error: `No admin route ${method} ${path}` });
    } catch (err) {
      return reply(400, { error: String(err instanceof Error ? err.message : err) });
    }
  }

  function faultReply(f: Fault): HttpReply {
    const status = f.status ?? 500;
    const headers: Record<string, string> = { ...(f.headers ?? {}) };
    if (f.retryAfter !== undefined) headers['retry-after'] = String(f.retryAfter);
    if (f.body !== undefined) return new HttpReply(status, new RawBody(f.body), headers);
    const defaults: Record<number, string> = {
      401: 'Unauthorized: the username or API token is wrong',
      404: 'Not found',
      422: 'Validation failed',
      423: 'The resource is busy. Try again later.',
      429: 'Too many requests',
    };
    return error(status, f.message ?? defaults[status] ?? 'Internal server error', headers);
  }

  function send(res: ServerResponse, record: RequestRecord, reply: HttpReply): void {
    record.status = reply.status;
    const text = reply.body === undefined ? '' : reply.body instanceof RawBody ? reply.body.text : JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      ...reply.headers,
      ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}),
      'content-length': String(Buffer.byteLength(text)),
    });
    res.end(text);
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

class RawBody {
  constructor(readonly text: string) {}
}

function matchesRecord(match: string, r: RequestRecord): boolean {
  return matches(match, r.method, r.path);
}

function describeFault(f: Fault): string {
  return [f.status !== undefined ? String(f.status) : null, f.kind ?? null, f.delayMs ? `delay ${f.delayMs}ms` : null]
    .filter(Boolean)
    .join(' ');
}

function asObject(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function decodeBasic(header: string | undefined): { username: string; token: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/.exec(header ?? '');
  if (!m) return null;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  return i < 0 ? null : { username: text.slice(0, i), token: text.slice(i + 1) };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
