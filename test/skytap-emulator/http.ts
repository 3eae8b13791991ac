/**
 * The emulator's HTTP plumbing: the record it keeps of each request, a reply and how it is written,
 * Skytap's error bodies, a fault's reply, and reading a request's body and Basic credentials.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Fault } from './faults';

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

const MAX_BODY = 1024 * 1024;

export class HttpReply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** A body sent as it is (a fault's hand-made body), not as JSON. */
class RawBody {
  constructor(readonly text: string) {}
}

/** Skytap's error reply: {"error": …} for 401 and 404, {"errors": […]} for the rest. */
export function error(status: number, message: string, headers: Record<string, string> = {}): HttpReply {
  return new HttpReply(status, status === 401 || status === 404 ? { error: message } : { errors: [message] }, headers);
}

export function faultReply(f: Fault): HttpReply {
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

/** Writes the reply and notes its status on the request's record. */
export function send(res: ServerResponse, record: { status: number }, reply: HttpReply): void {
  record.status = reply.status;
  const text = reply.body === undefined ? '' : reply.body instanceof RawBody ? reply.body.text : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    ...reply.headers,
    ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}),
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

export function describeFault(f: Fault): string {
  return [f.status !== undefined ? String(f.status) : null, f.kind ?? null, f.delayMs ? `delay ${f.delayMs}ms` : null]
    .filter(Boolean)
    .join(' ');
}

export function asObject(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

export function decodeBasic(header: string | undefined): { username: string; token: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/.exec(header ?? '');
  if (!m) return null;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  return i < 0 ? null : { username: text.slice(0, i), token: text.slice(i + 1) };
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
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

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
