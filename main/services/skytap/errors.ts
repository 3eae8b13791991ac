import type { z } from 'zod';
import { AppError, describeZodError } from '../../../shared/contract/errors';

/**
 * Every Skytap failure the client reports, as an AppError whose message says what happened and
 * what to do. `detail.skytap` marks the error as coming from the Skytap client; `detail.reason`
 * (for unavailable) is 'server' or 'network' so callers can tell a fault from an outage.
 */
export type UnavailableReason = 'server' | 'network';

export interface SkytapErrorDetail {
  skytap: true;
  request: string;
  status?: number;
  reason?: UnavailableReason;
  /** Set on a create whose outcome is unknown (5xx, timeout, unreadable reply after sending). */
  maybeCreated?: boolean;
  retries?: number;
  waitedMs?: number;
  retryAfterMs?: number;
  projectId?: string;
  field?: string;
}

function detail(request: string, extra: Omit<SkytapErrorDetail, 'skytap' | 'request'> = {}): SkytapErrorDetail {
  return { skytap: true, request, ...extra };
}

export function unauthorizedError(request: string): AppError {
  return new AppError(
    'unauthorized',
    'Skytap rejected the credentials (401). Skytap wants the API security token from your Account page, ' +
      'not the account password: copy the token from Skytap → Account → API security token into ' +
      'Settings → Skytap, check the username, and save.',
    detail(request, { status: 401 }),
  );
}

export function forbiddenError(request: string, skytapMessage: string | null): AppError {
  return new AppError(
    'forbidden',
    `Skytap refused the request (403${skytapMessage ? `: ${skytapMessage}` : ''}). ` +
      "The token's user lacks the permission for this; ask a Skytap administrator for access.",
    detail(request, { status: 403 }),
  );
}

export function projectNotFoundError(request: string, projectId: string): AppError {
  return new AppError(
    'not_found',
    `Skytap has no project ${projectId} visible to this token (404). Check the Project ID in ` +
      "Settings → Skytap (the number in the project's URL), or the token's access to that project; " +
      'leave the Project ID blank to use the whole account.',
    detail(request, { status: 404, projectId }),
  );
}

export function notFoundError(request: string, what: string): AppError {
  return new AppError(
    'not_found',
    `Skytap has no ${what} (404). It may have been deleted in Skytap; refresh the list.`,
    detail(request, { status: 404 }),
  );
}

export function rateLimitedError(
  request: string,
  info: { status: number; retries: number; waitedMs: number; retryAfterMs?: number },
): AppError {
  const why =
    info.status === 429
      ? 'too many requests for this account'
      : info.status === 423
        ? 'locked: the resource is busy or the account is being rate limited'
        : 'the resource stayed busy';
  const after = info.retryAfterMs !== undefined ? ` Skytap asked to wait ${Math.ceil(info.retryAfterMs / 1000)} s more.` : '';
  return new AppError(
    'rate_limited',
    `Skytap rate limited this request (${info.status}: ${why}); gave up after ${info.retries} ` +
      `retr${info.retries === 1 ? 'y' : 'ies'} and ${Math.round(info.waitedMs / 1000)} s of waiting.${after} ` +
      'Nothing is broken: try again in a few minutes.',
    detail(request, {
      status: info.status,
      retries: info.retries,
      waitedMs: info.waitedMs,
      ...(info.retryAfterMs !== undefined ? { retryAfterMs: info.retryAfterMs } : {}),
    }),
  );
}

export function validationError(request: string, status: number, skytapMessage: string | null): AppError {
  return new AppError(
    'invalid_request',
    `Skytap refused the request as invalid (${status}): ${skytapMessage ?? 'no reason given'}. Correct the value and try again.`,
    detail(request, { status }),
  );
}

export function conflictError(request: string, skytapMessage: string | null): AppError {
  return new AppError(
    'conflict',
    `Skytap reported a conflict (409): ${skytapMessage ?? 'no reason given'}. Refresh and try again.`,
    detail(request, { status: 409 }),
  );
}

export function serverError(
  request: string,
  status: number,
  skytapMessage: string | null,
  opts: { retries: number; isCreate: boolean },
): AppError {
  const tail = opts.isCreate
    ? ' The create was sent once and is not re-sent: the environment may exist in Skytap; ' +
      'a refresh of the environment list will find it.'
    : opts.retries > 0
      ? ` Retried ${opts.retries} time${opts.retries === 1 ? '' : 's'}. Try again later; check status.skytap.com.`
      : ' Try again later; check status.skytap.com.';
  return new AppError(
    'unavailable',
    `Skytap answered with a server error (${status}${skytapMessage ? `: ${skytapMessage}` : ''}).${tail}`,
    detail(request, { status, reason: 'server', retries: opts.retries, ...(opts.isCreate ? { maybeCreated: true } : {}) }),
  );
}

export function networkError(request: string, cause: string, opts: { retries: number; isCreate: boolean }): AppError {
  const tail = opts.isCreate
    ? ' The create is not re-sent: it may have reached Skytap, so the environment may exist; ' +
      'a refresh of the environment list will find it.'
    : ' Check the network and the Skytap URL in Settings → Skytap, then try again.';
  return new AppError(
    'unavailable',
    `Could not reach Skytap (${cause})${opts.retries > 0 ? ` after ${opts.retries} retr${opts.retries === 1 ? 'y' : 'ies'}` : ''}.${tail}`,
    detail(request, { reason: 'network', retries: opts.retries, ...(opts.isCreate ? { maybeCreated: true } : {}) }),
  );
}

/** A reply that was cut short or is not JSON: the server's fault, reason 'server'. */
export function unreadableReplyError(request: string, what: string, opts: { isCreate: boolean; retries: number }): AppError {
  const tail = opts.isCreate
    ? ' The create is not re-sent: the environment may exist in Skytap; a refresh of the environment list will find it.'
    : ' Try again; if it keeps happening, Skytap or a proxy in between is mangling replies.';
  return new AppError(
    'unavailable',
    `Skytap's reply could not be read (${what}).${tail}`,
    detail(request, { reason: 'server', retries: opts.retries, ...(opts.isCreate ? { maybeCreated: true } : {}) }),
  );
}

/** The reply parsed but does not have the shape the app relies on; the message names the field. */
export function shapeError(request: string, error: z.ZodError): AppError {
  const first = error.issues[0];
  const field = first && first.path.length ? first.path.map(String).join('.') : '(root)';
  return new AppError(
    'internal',
    describeZodError(`Skytap's reply to ${request} has an unexpected shape (field ${field})`, error) +
      '. The Skytap API may have changed; report this with the request named.',
    detail(request, { field }),
  );
}

export function shortPageError(request: string, got: number, expected: number, offset: number, total: number): AppError {
  return new AppError(
    'unavailable',
    `Skytap returned ${got} item${got === 1 ? '' : 's'} at offset ${offset} where ${expected} were promised ` +
      `(total ${total}); the listing is incomplete, so it is not used. Try again.`,
    detail(request, { reason: 'server' }),
  );
}

export function cancelledError(request: string): AppError {
  return new AppError('cancelled', `The Skytap request ${request} was cancelled.`, detail(request));
}

export function skytapMessageOf(body: unknown): string | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as { errors?: unknown; error?: unknown };
  if (Array.isArray(b.errors)) {
    const texts = b.errors.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))).filter(Boolean);
    if (texts.length) return texts.join('; ').slice(0, 500);
  }
  if (typeof b.error === 'string' && b.error) return b.error.slice(0, 500);
  return null;
}
