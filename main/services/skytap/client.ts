import type { Agent, Dispatcher } from 'undici';
import { lazyRequire } from '../lazy';
import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import { checkCredentialUrl } from '../../../shared/url-policy';
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
  shortPageError,
  skytapMessageOf,
  unauthorizedError,
  unreadableReplyError,
  validationError,
} from './errors';
import {
  environmentList,
  environmentSchema,
  templateList,
  templateSchema,
  userDataSchema,
  vmList,
  type Environment,
  type Template,
  type Vm,
} from './schemas';

const undici = lazyRequire<typeof import('undici')>('undici');

/**
 * The one place Skytap's behaviours are handled (docs/skytap.md explains each rule):
 * Basic username:token auth; keep_idle=true on every read; 423/429 and 422-busy retried honouring
 * Retry-After within a per-client budget; 5xx/network retried for reads only; a create is never
 * sent twice; collections walked by count/offset to the reported total; every reply validated.
 */

export const DEFAULT_SKYTAP_URL = 'https://cloud.skytap.com';
export const PAGE_SIZE = 100;
/** Skytap's documented limit for user_data contents (characters). */
export const USER_DATA_MAX = 16384;

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

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

interface Reply {
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

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
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

/**
 * Content-Range of a paginated collection: `items <first>-<last>/<total>` (the unit prefix is
 * optional) or `items * /<total>` for an empty range. null when absent; an error when unreadable.
 */
export function parseContentRange(
  value: string | string[] | undefined,
): { first: number; last: number; total: number } | { first: null; last: null; total: number } | null | 'invalid' {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  const full = /^(?:[a-z]+\s+)?(\d+)-(\d+)\/(\d+)$/i.exec(v);
  if (full) {
    const [first, last, total] = [Number(full[1]), Number(full[2]), Number(full[3])];
    if (last < first) return 'invalid';
    return { first, last, total };
  }
  const empty = /^(?:[a-z]+\s+)?\*\/(\d+)$/i.exec(v);
  if (empty) return { first: null, last: null, total: Number(empty[1]) };
  return 'invalid';
}

function isBusyMessage(msg: string | null): boolean {
  return msg !== null && /\bbusy\b/i.test(msg);
}

function validId(id: string, what: string): string {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw new AppError('invalid_request', `Not a valid Skytap ${what} id: ${JSON.stringify(id).slice(0, 80)}.`);
  }
  return id;
}

export class SkytapClient {
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
      throw new AppError('invalid_request', `The Skytap URL "${base}" is not a URL; set it in Settings → Skytap (default ${DEFAULT_SKYTAP_URL}).`);
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

  // ---- templates ---------------------------------------------------------------------------

  /** One page of the template catalogue (project-scoped when a Project ID is set). */
  async listTemplatesPage(count: number, offset: number): Promise<{ items: Template[]; total: number }> {
    const page = await this.page(this.collectionPath('templates'), count, offset, templateList);
    return { items: page.items, total: page.total };
  }

  /** Every template, walking every page. */
  listTemplates(): Promise<Template[]> {
    return this.walk(this.collectionPath('templates'), templateList);
  }

  async getTemplate(id: string): Promise<Template | null> {
    const r = await this.send('GET', `/v2/templates/${validId(id, 'template')}`, { notFoundIsNull: true });
    return r === null ? null : this.parse(r.body, templateSchema, `GET /v2/templates/${id}`);
  }

  // ---- environments ------------------------------------------------------------------------

  /** Every environment, walking every page (project-scoped when a Project ID is set). */
  listEnvironments(): Promise<Environment[]> {
    return this.walk(this.collectionPath('configurations'), environmentList);
  }

  async getEnvironment(id: string): Promise<Environment | null> {
    const path = `/v2/configurations/${validId(id, 'environment')}`;
    const r = await this.send('GET', path, { notFoundIsNull: true });
    return r === null ? null : this.parse(r.body, environmentSchema, `GET ${path}`);
  }

  /**
   * Creates an environment from a template. Sent at most once per call: a 423/429/422-busy reply
   * (Skytap refused it, so nothing was created) is retried; a 5xx, timeout or unreadable reply is
   * not — the error then carries detail.maybeCreated. Scoped to the project when one is set.
   * Skytap does not start the VMs; call setRunstate(id, 'running') once it is no longer busy.
   */
  async createEnvironment(req: { templateId: string; name: string }): Promise<Environment> {
    if (typeof req.name !== 'string' || req.name.trim() === '' || req.name.length > 255) {
      throw new AppError('invalid_request', 'An environment name must be 1 to 255 characters (Skytap\'s limit).');
    }
    const body: Record<string, unknown> = { template_id: validId(req.templateId, 'template'), name: req.name };
    // UNCONFIRMED: project_id in the create body (the Go SDK's CreateEnvironmentRequest has it) so
    // the project-scoped listing sees the new environment. See docs/skytap.md.
    if (this.projectId !== null) body.project_id = /^\d+$/.test(this.projectId) ? Number(this.projectId) : this.projectId;
    const r = await this.sendOk('POST', '/configurations.json', { body, isCreate: true });
    return this.parse(r.body, environmentSchema, 'POST /configurations.json', true);
  }

  /** Asks for a runstate. A 200 only means accepted: poll getEnvironment until it is reached. */
  async setRunstate(id: string, runstate: 'running' | 'suspended' | 'stopped' | 'halted'): Promise<Environment> {
    const path = `/configurations/${validId(id, 'environment')}.json`;
    const r = await this.sendOk('PUT', path, { body: { runstate }, what: `environment ${id}` });
    return this.parse(r.body, environmentSchema, `PUT ${path}`);
  }

  /**
   * Deletes an environment. 'deleted' means Skytap accepted the delete, which completes
   * asynchronously: it is done when getEnvironment answers null (404). 404 here → 'already_gone'.
   */
  async deleteEnvironment(id: string): Promise<'deleted' | 'already_gone'> {
    const path = `/configurations/${validId(id, 'environment')}.json`;
    const r = await this.send('DELETE', path, { notFoundIsNull: true });
    return r === null ? 'already_gone' : 'deleted';
  }

  // ---- VMs ---------------------------------------------------------------------------------

  listVms(envId: string): Promise<Vm[]> {
    return this.walk(`/v2/configurations/${validId(envId, 'environment')}/vms`, vmList, `environment ${envId}`);
  }

  async getVmUserData(envId: string, vmId: string): Promise<string> {
    const path = `/v2/configurations/${validId(envId, 'environment')}/vms/${validId(vmId, 'VM')}/user_data.json`;
    const r = await this.sendOk('GET', path, { what: `VM ${vmId} in environment ${envId}` });
    return this.parse(r.body, userDataSchema, `GET ${path}`).contents;
  }

  async setVmUserData(envId: string, vmId: string, contents: string): Promise<void> {
    if (contents.length > USER_DATA_MAX) {
      throw new AppError(
        'invalid_request',
        `The user_data is ${contents.length} characters; Skytap accepts at most ${USER_DATA_MAX}. Shorten the payload.`,
      );
    }
    const path = `/v2/configurations/${validId(envId, 'environment')}/vms/${validId(vmId, 'VM')}/user_data.json`;
    await this.sendOk('PUT', path, { body: { contents }, what: `VM ${vmId} in environment ${envId}` });
  }

  // ---- internals ---------------------------------------------------------------------------

  /**
   * UNCONFIRMED against a live account: that /v2/projects/{id}/templates and /configurations
   * return the account-wide shapes, honour count/offset, and answer 404 for a project the token
   * cannot see. This is the one place the project paths are built (docs/skytap.md).
   */
  private collectionPath(kind: 'templates' | 'configurations'): string {
    return this.projectId !== null ? `/v2/projects/${this.projectId}/${kind}` : `/v2/${kind}`;
  }

  private async page<T>(
    path: string,
    count: number,
    offset: number,
    schema: z.ZodType<T[]>,
    what?: string,
  ): Promise<{ items: T[]; total: number; ranged: boolean }> {
    if (!Number.isInteger(count) || count < 1 || count > 1000 || !Number.isInteger(offset) || offset < 0) {
      throw new AppError('invalid_request', `Bad page request: count ${count}, offset ${offset}.`);
    }
    const label = `GET ${path}?count=${count}&offset=${offset}`;
    const r = await this.sendOk('GET', path, { query: { count: String(count), offset: String(offset) }, what });
    const items = this.parse(r.body, schema, label);
    const range = parseContentRange(r.headers['content-range']);
    if (range === 'invalid') {
      throw unreadableReplyError(label, `Content-Range "${String(r.headers['content-range'])}" is not items <first>-<last>/<total>`, {
        isCreate: false,
        retries: 0,
      });
    }
    // No Content-Range: the reply was not truncated (what Skytap's own clients assume).
    if (range === null) return { items, total: offset + items.length, ranged: false };
    if (range.first !== null && range.first !== offset) {
      throw unreadableReplyError(label, `Content-Range starts at ${range.first}, not at the requested offset ${offset}`, {
        isCreate: false,
        retries: 0,
      });
    }
    if (range.first !== null && range.last - range.first + 1 !== items.length) {
      throw shortPageError(label, items.length, range.last - range.first + 1, offset, range.total);
    }
    return { items, total: range.total, ranged: true };
  }

  /**
   * Walks a collection to the total it reports; a page shorter than promised is an error.
   * Not private: the sibling files for sharing portals and schedules (share-api.ts) use it.
   */
  async walk<T>(path: string, schema: z.ZodType<T[]>, what?: string): Promise<T[]> {
    const all: T[] = [];
    let offset = 0;
    let total: number;
    for (let pages = 0; ; pages++) {
      const page = await this.page(path, PAGE_SIZE, offset, schema, what);
      if (!page.ranged) {
        // No Content-Range: this reply is the rest of the collection, however long.
        all.push(...page.items);
        break;
      }
      total = page.total;
      const expected = Math.max(0, Math.min(PAGE_SIZE, total - offset));
      if (page.items.length < expected) {
        throw shortPageError(`GET ${path}?count=${PAGE_SIZE}&offset=${offset}`, page.items.length, expected, offset, total);
      }
      all.push(...page.items.slice(0, Math.max(expected, 0)));
      offset += expected;
      if (offset >= total || expected === 0) break;
      if (pages > 100_000) throw new AppError('internal', `Walking ${path} did not end after ${pages} pages.`);
    }
    return all;
  }

  /** Validates a reply body (used by share-api.ts too). */
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
   * Reads carry keep_idle=true, always. Not private: share-api.ts adds the sharing-portal and
   * schedule endpoints beside this file through it, so every request keeps these rules.
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
        const cause = timedOut()
          ? `no complete reply within ${Math.round(this.timeoutMs / 1000)} s`
          : describeNetworkError(err);
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
