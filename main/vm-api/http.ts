/**
 * One HTTP(S) exchange, for the vm-manager client: http://, https:// (with an
 * optional CA bundle for a cluster's own CA) or unix:/path. No redirects are followed; the body is
 * read whole (the API's answers are small).
 */
import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HttpOptions {
  /** PEM text of the CA certificates to trust for https (instead of the system's); none: the system's */
  ca?: string | undefined;
  timeoutMs: number;
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export class HttpFailure extends Error {
  constructor(
    message: string,
    readonly kind: 'unreachable' | 'timeout' | 'bad_url',
  ) {
    super(message);
    this.name = 'HttpFailure';
  }
}

/** base: http(s)://host[:port][/prefix] or unix:/path/to.sock; path is appended to the base's path. */
export function exchange(
  base: string,
  path: string,
  init: { method: string; headers?: Record<string, string>; body?: Buffer | undefined },
  o: HttpOptions,
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body) headers['Content-Length'] = String(init.body.length);
  let opts: RequestOptions;
  let send = httpRequest;
  if (base.startsWith('unix:')) {
    opts = { socketPath: base.slice(5), path, method: init.method, headers };
  } else {
    let u: URL;
    try {
      u = new URL(base);
    } catch {
      return Promise.reject(new HttpFailure(`"${base}" is not a URL (http(s)://host:port or unix:/path)`, 'bad_url'));
    }
    if (u.protocol === 'https:') send = httpsRequest;
    else if (u.protocol !== 'http:') return Promise.reject(new HttpFailure(`the URL must be http(s):// or unix:, got ${base}`, 'bad_url'));
    const full = new URL(u.pathname.replace(/\/+$/, '') + path, u);
    opts = {
      hostname: u.hostname,
      port: u.port,
      path: full.pathname + full.search,
      method: init.method,
      headers,
      ...(o.ca ? { ca: o.ca } : {}),
    };
  }
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = send(opts, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('error', (e) => reject(new HttpFailure(`the answer from ${base} broke off: ${e.message}`, 'unreachable')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.setTimeout(o.timeoutMs, () => req.destroy(new HttpFailure(`no answer from ${base} within ${o.timeoutMs} ms`, 'timeout')));
    req.on('error', (e) => reject(e instanceof HttpFailure ? e : new HttpFailure(`cannot reach ${base}: ${e.message}`, 'unreachable')));
    req.end(init.body);
  });
}
