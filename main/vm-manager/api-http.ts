/**
 * What every route of the REST API (api.ts) shares: the context its handlers get, the guards in
 * front of it (the Host header, the bearer token), reading and checking a JSON body, matching a
 * path template, and answering: JSON, or the document's {"error":{"code","message"}}.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { listZodIssues } from '../../shared/contract/errors';
import { ERROR_STATUS, type ApiErrorCode } from '../vm-api/schemas';
import { STATUS, VmmError, type VmmCode } from './errors';
import type { HostReport } from './host';
import type { Networks } from './networks';
import type { VmService } from './vms';

const MAX_BODY = 8 * 1024 * 1024;

export interface ApiContext {
  stateDir: string;
  token: string;
  vms: VmService;
  networks: Networks;
  host: () => Promise<HostReport>;
  /** the one Host header accepted (address:port we listen on); null: no check (unix socket) */
  allowedHost?: () => string | null;
}

/** What a route's handler gets: the request, the response, the URL and the path's `{param}` values. */
export interface RouteArgs {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
}
export type Handler = (a: RouteArgs) => unknown;

/** The path's parameters when its segments match the template's, else null. */
export function matchPath(template: string, seg: string[]): Record<string, string> | null {
  const t = template.split('/').filter(Boolean);
  if (t.length !== seg.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < t.length; i++) {
    const name = /^\{(\w+)\}$/.exec(t[i]!)?.[1];
    if (name) params[name] = seg[i]!;
    else if (t[i] !== seg[i]) return null;
  }
  return params;
}

/** Parses a body; an unknown field is named together with the fields the route takes. */
export function parseBody<S extends z.ZodObject>(schema: S, body: unknown): z.output<S> {
  const fields = Object.keys(schema.shape).join(', ');
  const r = schema.safeParse(body, {
    error: (i) =>
      i.code === 'unrecognized_keys'
        ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}: the fields are ${fields}`
        : undefined,
  });
  if (!r.success) throw new VmmError('invalid_request', listZodIssues(r.error, 'body'));
  return r.data;
}

export function tokenOk(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function readJson(req: IncomingMessage, required: boolean): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const d of req) {
    size += (d as Buffer).length;
    if (size > MAX_BODY) throw new VmmError('invalid_request', `the body is over ${MAX_BODY} bytes`);
    parts.push(d as Buffer);
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (!text.trim()) {
    if (required) throw new VmmError('invalid_request', 'the body is empty: this route takes a JSON object');
    return {};
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new VmmError('invalid_request', `the body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * DNS rebinding: over TCP only the exact address:port the manager listens on is a valid Host (a unix
 * socket has none to check, so `allowed` is null there). The refusal's message, or null when allowed.
 */
export function hostRefusal(req: IncomingMessage, allowed: string | null): string | null {
  if (allowed === null || req.headers.host === allowed) return null;
  return (
    `Host "${req.headers.host ?? ''}" is not this vm-manager (${allowed}); ` +
    'call it by that address (a page on another name is refused: DNS rebinding)'
  );
}

/** The document's code for an error of this daemon (401/403 come from the guard, outside the document). */
function wireCode(code: VmmCode): { code: string; status: number } {
  if (code === 'unauthorized' || code === 'forbidden') return { code, status: STATUS[code] };
  const doc: ApiErrorCode = code === 'internal' || code === 'unavailable' ? 'internal_error' : code;
  return { code: doc, status: ERROR_STATUS[doc] };
}

/** Answers `body` as JSON (a string as it is, with `type`), or an empty answer without one. */
export function send(res: ServerResponse, status: number, body?: unknown, type = 'application/json') {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(text)) }).end(text);
}

/** Answers an error in the document's shape, with its status. */
export function fail(res: ServerResponse, code: VmmCode, message: string) {
  const w = wireCode(code);
  if (code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="vm-manager"');
  send(res, w.status, { error: { code: w.code, message } });
}
