import { jsonOrNull, lazyRequire } from '../lazy';
import { AppError } from '../../../shared/contract/errors';
import { sleep } from '../../lib/sleep';
import { codeFor } from '../control-node/control-plane';
import type { Sleep } from './types';

const undici = lazyRequire<typeof import('undici')>('undici');

/**
 * The one HTTP helper the three tenant clients share: JSON in and out, a timeout, and bounded
 * retries of 429/503 honouring Retry-After (Entitle's own client waits up to 3 minutes). It never
 * puts a request body or header into an error: those carry the secrets.
 */
export interface HttpOptions {
  timeoutMs?: number;
  sleep?: Sleep;
  /** Longest total wait across retries (default 180 s). */
  maxRetryWaitMs?: number;
  maxRetries?: number;
}

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  json: unknown;
  text: string;
}

export interface HttpCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  signal?: AbortSignal;
}

const defaultSleep: Sleep = (ms, signal) =>
  sleep(ms, signal).catch(() => {
    throw new AppError('cancelled', 'cancelled');
  });

function retryAfterMs(h: Record<string, string>): number | null {
  const v = h['retry-after'];
  if (!v) return null;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, n * 1000);
  const d = Date.parse(v);
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : null;
}

export async function send(product: string, call: HttpCall, opts: HttpOptions = {}): Promise<HttpReply> {
  const timeout = opts.timeoutMs ?? 20_000;
  const sleep = opts.sleep ?? defaultSleep;
  let waited = 0;
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
      let body: string | undefined;
      if (call.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(call.json);
      } else if (call.form) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams(call.form).toString();
      }
      res = await undici().request(call.url, {
        method: call.method,
        headers,
        body,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch (err) {
      if (call.signal?.aborted) throw new AppError('cancelled', `${product}: ${call.method} cancelled`);
      const e = err as NodeJS.ErrnoException;
      const timedOut = /timeout/i.test(e.code ?? '') || /timeout/i.test(e.message);
      throw new AppError(
        timedOut ? 'timeout' : 'unavailable',
        `cannot reach ${product} at ${new URL(call.url).origin} (${e.code ?? e.message}); check the URL and the network`,
        {
          reason: 'network',
        },
      );
    }
    const text = await res.body.text();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers))
      if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
    const json = jsonOrNull(text);
    if ((res.statusCode === 429 || res.statusCode === 503) && attempt < (opts.maxRetries ?? 6)) {
      const wait = retryAfterMs(headers) ?? Math.min(1000 * 2 ** attempt, 10_000);
      if (waited + wait <= (opts.maxRetryWaitMs ?? 180_000)) {
        waited += wait;
        await sleep(wait, call.signal);
        continue;
      }
    }
    return { status: res.statusCode, headers, json, text };
  }
}

/** A DELETE's answer: 404 means already gone; any other failure is a replyError. */
export function deleteOutcome(product: string, what: string, r: HttpReply, said: string, remedy: string): 'deleted' | 'already_gone' {
  if (r.status === 404) return 'already_gone';
  if (r.status >= 400) throw replyError(product, what, r, said, remedy);
  return 'deleted';
}

/** An AppError for a non-2xx answer; `said` is what the tenant said (never what we sent). */
export function replyError(product: string, what: string, r: HttpReply, said: string, remedy: string): AppError {
  const code = codeFor(r.status);
  const reason = code === 'rate_limited' ? 'rate_limited' : code === 'unavailable' ? 'server' : undefined;
  return new AppError(
    code,
    `${product} ${what} answered ${r.status}${said ? `: ${said.slice(0, 300)}` : ''}; ${remedy}`,
    reason ? { reason } : undefined,
  );
}
