import type { Agent, Dispatcher } from 'undici';
import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import { checkCredentialUrl } from '../../../shared/url-policy';
import { sleep as defaultSleep } from '../../lib/sleep';
import { lazyRequire } from '../lazy';
import {
  cancelledError,
  conflictError,
  forbiddenError,
  networkError,
  notFoundError,
  projectNotFoundError,
  rateLimitedError,
  serverError,
  shapeError,
  skytapMessageOf,
  unauthorizedError,
  unreadableReplyError,
  validationError,
} from './errors';

const undici = lazyRequire<typeof import('undici')>('undici');

/**
 * One logical request to Skytap with its rules (docs/skytap.md explains each): Basic
 * username:token auth; keep_idle=true on every read; 423/429 and 422-busy retried honouring
 * Retry-After within a per-client budget; 5xx/network retried for reads only; a create is never
 * sent twice; every reply size-capped and validated. The endpoints are in client.ts, the
 * collection walk in pagination.ts.
 */

export const DEFAULT_SKYTAP_URL = 'https://cloud.skytap.com';

export interface SkytapConfig {
  baseUrl: string;
  username: string;
  token: string;
  projectId?: string;
}

export interface RetryBudget {
  /** Retries after the first attempt, per request. */
  maxRetries: number;
  /** Wait used when a 423/429/422-busy carries no usable Retry-After. */
  fallbackWaitMs: number;
  /** The most one request may spend waiting; a Retry-After that would pass it ends the retries. */
  maxTotalWaitMs: number;
}

export const BUDGETS: { provisioning: RetryBudget; testConnection: RetryBudget } = {
  /** A job that has already waited minutes should keep waiting. */
  provisioning: { maxRetries: 30, fallbackWaitMs: 10_000, maxTotalWaitMs: 10 * 60_000 },
  /** One retry, so a rate-limited account answers the button instead of hanging behind a spinner. */
  testConnection: { maxRetries: 1, fallbackWaitMs: 5_000, maxTotalWaitMs: 15_000 },
};

/** 5xx/network retries (reads only) never exceed this, whatever the budget allows for 423/429. */
const MAX_FAULT_RETRIES = 3;
const FAULT_BACKOFF_BASE_MS = 500;
export const DEFAULT_TIMEOUT_MS = 30_000;
/** A reply larger than this is refused rather than buffered (a 100-environment page is ~1 MB at most). */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;
/** Errors that mean no connection was made, so the request never left. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export interface RetryInfo {
  /** HTTP status, or 0 for a network error. */
  status: number;
  waitMs: number;
  /** 1 for the first retry. */
  attempt: number;
}

export interface SkytapClientOptions {
  budget?: RetryBudget;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
  onRetry?: (info: RetryInfo) => void;
  /** Per-request timeout (headers and body); default 30 s. */
  timeoutMs?: number;
  /** Largest reply accepted (default MAX_REPLY_BYTES). */
  maxReplyBytes?: number;
  dispatcher?: Dispatcher;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, or undefined for an empty body. */
  body: unknown;
}

let sharedAgent: Agent | null = null;
function defaultDispatcher(): Agent {
  sharedAgent ??= new (undici().Agent)({ keepAliveTimeout: 10_000, connections: 8 });
  return sharedAgent;
}

/**
 * Retry-After as milliseconds: integer seconds or an HTTP date. null when absent or garbage
 * (the caller then uses the budget's fallback wait).
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | null {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  if (/^\d+$/.test(v)) {
    const s = Number(v);
    return Number.isSafeInteger(s) ? s * 1000 : null;
  }
  // An HTTP date has a weekday, a day, a month name and a time; Date.parse alone accepts far more.
  if (!/^[A-Za-z]{3},\s+\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}:\d{2}\s+GMT$/.test(v)) return null;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

function isBusyMessage(msg: string | null): boolean {
  return msg !== null && /\bbusy\b/i.test(msg);
}

export function validId(id: string, what: string): string {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw new AppError('invalid_request', `Not a valid Skytap ${what} id: ${JSON.stringify(id).slice(0, 80)}.`);
  }
  return id;
}

/** The request half of SkytapClient: configuration checks, auth, retries and error mapping. */
export class SkytapHttp {
  readonly baseUrl: string;
  readonly projectId: string | null;
  private readonly auth: string;
  private readonly budget: RetryBudget;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly signal: AbortSignal | undefined;
  private readonly onRetry: ((info: RetryInfo) => void) | undefined;
  private readonly timeoutMs: number;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: boolean;
  private readonly maxReplyBytes: number;

  constructor(cfg: SkytapConfig, opts: SkytapClientOptions = {}) {
    const base = (cfg.baseUrl || DEFAULT_SKYTAP_URL).trim().replace(/\/+$/, '');
    let parsed: URL;
    try {
      parsed = new URL(base);
    } catch {
      throw new AppError(
        'invalid_request',
        `The Skytap URL "${base}" is not a URL; set it in Settings → Skytap (default ${DEFAULT_SKYTAP_URL}).`,
      );
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      throw new AppError('invalid_request', `The Skytap URL must be http(s), not ${parsed.protocol}; set it in Settings → Skytap.`);
    }
    checkCredentialUrl('the Skytap URL', base, 'set it in Settings → Skytap (or fix SKYTAP_URL)');
    if (!cfg.username || !cfg.token) {
      throw new AppError('invalid_request', 'Skytap username or API token is not set: enter both in Settings → Skytap and save.');
    }
    this.baseUrl = base;
    const pid = cfg.projectId?.trim() ?? '';
    this.projectId = pid === '' ? null : validId(pid, 'project');
    this.auth = 'Basic ' + Buffer.from(`${cfg.username}:${cfg.token}`, 'utf8').toString('base64');
    this.budget = opts.budget ?? BUDGETS.provisioning;
    this.sleep = opts.sleep ?? defaultSleep;
    this.signal = opts.signal;
    this.onRetry = opts.onRetry;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.dispatcher = opts.dispatcher ?? defaultDispatcher();
    this.ownDispatcher = opts.dispatcher === undefined;
    this.maxReplyBytes = opts.maxReplyBytes ?? MAX_REPLY_BYTES;
  }

  /** Validates a reply body against its schema; a create's unreadable reply is marked maybeCreated. */
  parse<T>(body: unknown, schema: z.ZodType<T>, label: string, isCreate = false): T {
    if (body === undefined) {
      throw unreadableReplyError(label, 'the body is empty', { isCreate, retries: 0 });
    }
    const res = schema.safeParse(body);
    if (!res.success) {
      const err = shapeError(label, res.error);
      if (isCreate) (err.detail as Record<string, unknown>).maybeCreated = true;
      throw err;
    }
    return res.data;
  }

  private url(path: string, query: Record<string, string>): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    return u.toString();
  }

  private signalFor(): { signal: AbortSignal; timedOut: () => boolean } {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = this.signal ? AbortSignal.any([this.signal, timeout]) : timeout;
    return { signal, timedOut: () => timeout.aborted && !this.signal?.aborted };
  }

  private async wait(ms: number, label: string): Promise<void> {
    try {
      await this.sleep(ms, this.signal);
    } catch (err) {
      if (this.signal?.aborted) throw cancelledError(label);
      throw err;
    }
  }

  /**
   * One logical request with the retry rules. Returns null for a 404 when notFoundIsNull.
   * Reads carry keep_idle=true, always. Every endpoint (client.ts, share-api.ts) goes through it,
   * so every request keeps these rules.
   */
  async send(
    method: Method,
    path: string,
    opts: { query?: Record<string, string>; body?: unknown; isCreate?: boolean; notFoundIsNull?: boolean; what?: string } = {},
  ): Promise<Reply | null> {
    return this.attempt(method, path, opts);
  }

  /** send() for requests where 404 is an error: never null. */
  async sendOk(
    method: Method,
    path: string,
    opts: { query?: Record<string, string>; body?: unknown; isCreate?: boolean; what?: string } = {},
  ): Promise<Reply> {
    const r = await this.attempt(method, path, opts);
    if (r === null) throw new AppError('internal', `No reply for ${method} ${path}.`);
    return r;
  }

  private async attempt(
    method: Method,
    path: string,
    opts: { query?: Record<string, string>; body?: unknown; isCreate?: boolean; notFoundIsNull?: boolean; what?: string },
  ): Promise<Reply | null> {
    const isRead = method === 'GET';
    const isCreate = opts.isCreate === true;
    const query = { ...(opts.query ?? {}) };
    if (isRead) query.keep_idle = 'true';
    const url = this.url(path, query);
    const label = `${method} ${path}`;
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    let retries = 0;
    let faultRetries = 0;
    let waitedMs = 0;

    const mayWait = (ms: number): boolean => waitedMs + ms <= this.budget.maxTotalWaitMs;
    const retryAfter = async (status: number, ms: number): Promise<void> => {
      retries++;
      this.onRetry?.({ status, waitMs: ms, attempt: retries });
      await this.wait(ms, label);
      waitedMs += ms;
    };

    for (;;) {
      if (this.signal?.aborted) throw cancelledError(label);
      const { signal, timedOut } = this.signalFor();
      // A create goes out on a fresh connection: a pooled keep-alive socket the server has just
      // closed would fail it in a way indistinguishable from "sent, outcome unknown".
      const fresh = isCreate && this.ownDispatcher ? new (undici().Agent)({ pipelining: 0 }) : null;
      const dispatcher = fresh ?? this.dispatcher;
      let status: number;
      let headers: Reply['headers'];
      let text: string;
      try {
        const res = await undici().request(url, {
          method,
          dispatcher,
          signal,
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
          headers: {
            authorization: this.auth,
            accept: 'application/json',
            ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(payload !== undefined ? { body: payload } : {}),
        });
        status = res.statusCode;
        headers = res.headers;
        text = await readText(res.body, this.maxReplyBytes, label);
      } catch (err) {
        if (this.signal?.aborted) throw cancelledError(label);
        if (err instanceof AppError) throw err;
        const cause = timedOut() ? `no complete reply within ${Math.round(this.timeoutMs / 1000)} s` : describeNetworkError(err);
        if (isRead && faultRetries < Math.min(MAX_FAULT_RETRIES, this.budget.maxRetries) && retries < this.budget.maxRetries) {
          const ms = Math.min(FAULT_BACKOFF_BASE_MS * 2 ** faultRetries, this.budget.fallbackWaitMs);
          if (mayWait(ms)) {
            faultRetries++;
            await retryAfter(0, ms);
            continue;
          }
        }
        // A create that never got a connection cannot have reached Skytap; say so, still without re-sending.
        const notSent = isCreate && CONNECT_FAILURES.has(errorCode(err) ?? '');
        throw networkError(label, cause, { retries, isCreate: isCreate && !notSent });
      } finally {
        if (fresh) void fresh.close().catch(() => undefined);
      }

      let body: unknown = undefined;
      let unreadable: string | null = null;
      if (text.trim() !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          unreadable = `not JSON: ${JSON.stringify(text.slice(0, 60))}`;
        }
      }
      const message = skytapMessageOf(body) ?? (unreadable && status >= 400 ? text.trim().slice(0, 200) : null);

      if (status >= 200 && status < 300) {
        if (unreadable !== null) {
          if (isRead && faultRetries < Math.min(MAX_FAULT_RETRIES, this.budget.maxRetries) && retries < this.budget.maxRetries) {
            const ms = Math.min(FAULT_BACKOFF_BASE_MS * 2 ** faultRetries, this.budget.fallbackWaitMs);
            if (mayWait(ms)) {
              faultRetries++;
              await retryAfter(status, ms);
              continue;
            }
          }
          throw unreadableReplyError(label, unreadable, { isCreate, retries });
        }
        return { status, headers, body };
      }

      const busy422 = status === 422 && isBusyMessage(message);
      if (status === 423 || status === 429 || busy422) {
        // Skytap refused the request (busy or rate limited), so even a create is safe to re-send.
        const hinted = parseRetryAfter(headers['retry-after']);
        const ms = hinted ?? this.budget.fallbackWaitMs;
        if (retries < this.budget.maxRetries && mayWait(ms)) {
          await retryAfter(status, ms);
          continue;
        }
        throw rateLimitedError(label, {
          status,
          retries,
          waitedMs,
          ...(hinted !== null && !mayWait(hinted) ? { retryAfterMs: hinted } : {}),
        });
      }
      if (status === 404 && opts.notFoundIsNull && !path.startsWith('/v2/projects/')) return null;
      if (status === 401) throw unauthorizedError(label);
      if (status === 403) throw forbiddenError(label, message);
      if (status === 404) {
        if (path.startsWith('/v2/projects/') && this.projectId !== null) throw projectNotFoundError(label, this.projectId);
        throw notFoundError(label, opts.what ?? path);
      }
      if (status === 409) throw conflictError(label, message);
      if (status === 422 || status === 400) throw validationError(label, status, message);
      if (status >= 500) {
        if (isRead && faultRetries < Math.min(MAX_FAULT_RETRIES, this.budget.maxRetries) && retries < this.budget.maxRetries) {
          const hinted = parseRetryAfter(headers['retry-after']);
          const ms = hinted ?? Math.min(FAULT_BACKOFF_BASE_MS * 2 ** faultRetries, this.budget.fallbackWaitMs);
          if (mayWait(ms)) {
            faultRetries++;
            await retryAfter(status, ms);
            continue;
          }
        }
        throw serverError(label, status, message, { retries, isCreate });
      }
      throw new AppError(
        'internal',
        `Skytap answered ${label} with an unexpected status ${status}${message ? `: ${message}` : ''}. Report this with the request named.`,
        { skytap: true, request: label, status },
      );
    }
  }
}

function errorCode(err: unknown): string | null {
  if (!err || typeof err !== 'object') return null;
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  if (typeof e.cause?.code === 'string') return e.cause.code;
  return typeof e.code === 'string' ? e.code : null;
}

async function readText(body: AsyncIterable<Buffer | Uint8Array>, limit: number, label: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      throw new AppError('unavailable', `Skytap's reply to ${label} is over ${limit} bytes; refused. Try again later.`, {
        skytap: true,
        request: label,
        reason: 'server',
      });
    }
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeNetworkError(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
    const code = typeof e.cause?.code === 'string' ? e.cause.code : typeof e.code === 'string' ? e.code : null;
    const msg = typeof e.message === 'string' ? e.message : String(err);
    return code ? `${code}: ${msg}` : msg;
  }
  return String(err);
}
