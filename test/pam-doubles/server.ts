import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One request as a double saw it: what the conformance test walks. */
export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  status: number;
  /** What the double answered (for checking the double itself against the spec). */
  response: unknown;
}

export interface Req {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  raw: string;
  json: unknown;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A loopback HTTP server that records every request and answers through `handle`. */
export class DoubleServer {
  readonly requests: Recorded[] = [];
  url = '';
  private readonly server: Server;

  constructor(private readonly handle: (req: Req) => Reply | Promise<Reply>) {
    this.server = createServer((req, res) => void this.serve(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    if (!a || typeof a === 'string') throw new Error('double has no address');
    this.url = `http://127.0.0.1:${a.port}`;
    return this;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse) {
    const u = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    let json: unknown = undefined;
    if (raw && (headers['content-type'] ?? '').includes('json')) {
      try {
        json = JSON.parse(raw);
      } catch {
        json = Symbol.for('bad-json');
      }
    }
    const query = Object.fromEntries(u.searchParams.entries());
    const r: Req = { method: req.method ?? 'GET', path: decodeURIComponent(u.pathname), query, headers, raw, json };
    let reply: Reply;
    try {
      reply = await this.handle(r);
    } catch (err) {
      reply = { status: 500, body: { message: String(err) } };
    }
    this.requests.push({
      method: r.method,
      path: r.path,
      query,
      headers,
      body: typeof json === 'symbol' ? raw : (json ?? (raw || undefined)),
      status: reply.status,
      response: reply.body,
    });
    res.statusCode = reply.status;
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    if (reply.body === undefined) return res.end();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(reply.body));
  }
}

/** Field rules as the specs state them (type, required, enum, lengths, ranges, read-only). */
export interface Field {
  t: 'string' | 'integer' | 'boolean' | 'array' | 'object';
  req?: boolean;
  enum?: readonly string[];
  min?: number;
  max?: number;
  ro?: boolean;
  pattern?: RegExp;
  nullable?: boolean;
}

/** Checks a body against field rules: unknown names, then types and constraints, as an error bag. */
export function checkFields(body: Record<string, unknown>, fields: Record<string, Field>, opts: { partial?: boolean } = {}) {
  const unknown = Object.keys(body).filter((k) => !(k in fields));
  const errors: Record<string, string[]> = {};
  const add = (k: string, m: string) => (errors[k] ??= []).push(m);
  for (const [k, f] of Object.entries(fields)) {
    const v = body[k];
    if (v === undefined) {
      if (f.req && !opts.partial) add(k, `The ${k} field is required.`);
      continue;
    }
    if (f.ro) {
      add(k, `The ${k} field is read-only.`);
      continue;
    }
    if (v === null) {
      if (!f.nullable) add(k, `The ${k} field may not be null.`);
      continue;
    }
    if (f.t === 'integer' && !(typeof v === 'number' && Number.isInteger(v))) add(k, `The ${k} must be an integer.`);
    else if (f.t === 'string' && typeof v !== 'string') add(k, `The ${k} must be a string.`);
    else if (f.t === 'boolean' && typeof v !== 'boolean') add(k, `The ${k} field must be true or false.`);
    else if (f.t === 'array' && !Array.isArray(v)) add(k, `The ${k} must be an array.`);
    else if (f.t === 'object' && (typeof v !== 'object' || Array.isArray(v))) add(k, `The ${k} must be an object.`);
    else if (typeof v === 'string') {
      if (f.min !== undefined && v.length < f.min) add(k, `The ${k} must be at least ${f.min} characters.`);
      if (f.max !== undefined && v.length > f.max) add(k, `The ${k} may not be greater than ${f.max} characters.`);
      if (f.enum && !f.enum.includes(v)) add(k, `The selected ${k} is invalid.`);
      if (f.pattern && v && !f.pattern.test(v)) add(k, `The ${k} format is invalid.`);
    } else if (typeof v === 'number') {
      if (f.min !== undefined && v < f.min) add(k, `The ${k} must be at least ${f.min}.`);
      if (f.max !== undefined && v > f.max) add(k, `The ${k} may not be greater than ${f.max}.`);
    }
  }
  return { unknown, errors };
}

/** The common face of a double: a recording loopback server answering through `handle`. */
export abstract class Double {
  readonly server = new DoubleServer((r) => this.handle(r));
  protected abstract handle(r: Req): Reply | Promise<Reply>;
  get url() {
    return this.server.url;
  }
  get requests() {
    return this.server.requests;
  }
  async start(): Promise<this> {
    await this.server.start();
    return this;
  }
  stop(): Promise<void> {
    return this.server.stop();
  }
}
