/**
 * The emulator's admin endpoints under /__emulator/ (no auth), so that another process (the e2e
 * host, a shell; see ./serve) can script faults, read the request log and the state, reset to a
 * seed, hold an environment busy, move the clock, and change timings. Over HTTP a fault's match is
 * a string and its times may be "Infinity".
 */
import type { ServerResponse } from 'node:http';
import type { Fault, FaultScript } from './faults';
import type { RequestRecord } from './http';
import type { SkytapRoutes } from './routes';
import { applySeed } from './seed';
import type { SharingState } from './sharing';
import type { EmulatorState } from './state';

export interface AdminParts {
  state: EmulatorState;
  sharing: SharingState;
  faults: FaultScript;
  requests: RequestRecord[];
  routes: SkytapRoutes;
  /** The emulator's own URL, known once it listens. */
  url: () => string;
}

export function admin(parts: AdminParts, method: string, path: string, raw: Buffer, res: ServerResponse): void {
  const { state, sharing, faults, requests, routes } = parts;
  const baseUrl = parts.url();
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
        environments: routes.liveEnvs().map((e) => ({ ...state.envJson(e, baseUrl), projects: [...e.projects] })),
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
