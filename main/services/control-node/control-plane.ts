import { jsonOrNull, lazyRequire } from '../lazy';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, listZodIssues, type ErrorCode } from '../../../shared/contract/errors';
import { checkCredentialUrl } from '../../../shared/url-policy';

const undici = lazyRequire<typeof import('undici')>('undici');

/**
 * The agent control plane: where enrolment codes and SPIRE join tokens come from and where an
 * agent's enrolment is read back. Protocol: docs/control-plane.md. HttpControlPlane speaks it
 * over HTTP; ControlPlaneDouble (test/support/control-plane-double.ts) serves it on loopback for tests.
 */
export const ENROLMENT_CODE_TTL_MS = 15 * 60 * 1000;

export const enrolmentCodeSchema = lazySchema(() =>
  z
    .object({
      agentId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/),
      code: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,511}$/),
      expiresAt: z.iso.datetime(),
    })
    .strict(),
);
export type EnrolmentCode = z.infer<typeof enrolmentCodeSchema>;

export const joinTokenSchema = lazySchema(() =>
  z
    .object({
      token: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,511}$/),
      spiffeId: z.string().startsWith('spiffe://'),
      expiresAt: z.iso.datetime(),
    })
    .strict(),
);
export type JoinToken = z.infer<typeof joinTokenSchema>;

export const AGENT_STATES = ['pending', 'enrolled', 'expired', 'revoked'] as const;
export const enrolmentStateSchema = lazySchema(() =>
  z
    .object({
      agentId: z.string(),
      state: z.enum(AGENT_STATES),
      attestation: z.enum(['spire', 'ed25519']).nullable(),
      enrolledAt: z.iso.datetime().nullable(),
    })
    .strict(),
);
export type EnrolmentState = z.infer<typeof enrolmentStateSchema>;

export const spireInfoSchema = lazySchema(() =>
  z.object({ trustDomain: z.string().min(1), serverAddress: z.string().min(1), trustBundle: z.string().min(1) }).strict(),
);
export type SpireInfo = z.infer<typeof spireInfoSchema>;

export interface ControlPlane {
  /** A single-use enrolment code for a new agent of this POV (valid 15 minutes). */
  mintEnrolmentCode(povId: string, signal?: AbortSignal): Promise<EnrolmentCode>;
  /** A one-use SPIRE join token for spiffe://<td>/node/<agentId>; binds spiffe://<td>/agent/<agentId>. */
  mintJoinToken(agentId: string, signal?: AbortSignal): Promise<JoinToken>;
  enrolmentState(agentId: string, signal?: AbortSignal): Promise<EnrolmentState>;
  /** Removes the agent and its SPIRE entries. Idempotent. */
  revoke(agentId: string, signal?: AbortSignal): Promise<'revoked' | 'already_gone'>;
  /** The control plane's SPIRE server, or null when it runs none. */
  spire(signal?: AbortSignal): Promise<SpireInfo | null>;
}

const errorBody = lazySchema(() => z.object({ error: z.object({ code: z.string(), message: z.string() }) }));

/** The error code for an HTTP status (the PAM clients map tenants' answers the same way). */
export function codeFor(status: number): ErrorCode {
  if (status === 400 || status === 422) return 'invalid_request';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'rate_limited';
  return 'unavailable';
}

export class HttpControlPlane implements ControlPlane {
  private readonly base: string;
  constructor(
    url: string,
    private readonly token: string,
    private readonly opts: { timeoutMs?: number; now?: () => Date } = {},
  ) {
    if (!/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(url)) {
      throw new AppError(
        'invalid_request',
        `control-plane URL ${JSON.stringify(url)} is not an http(s) URL; fix it in Settings → Control node`,
      );
    }
    checkCredentialUrl('the control-plane URL', url, 'fix it in Settings → Control node (or POVDESK_CONTROL_PLANE_URL)');
    this.base = url.replace(/\/+$/, '');
  }

  private async send(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<{ status: number; json: unknown }> {
    const url = `${this.base}${path}`;
    const timeout = this.opts.timeoutMs ?? 15_000;
    let res;
    try {
      res = await undici().request(url, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: timeout,
        bodyTimeout: timeout,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) throw new AppError('cancelled', `${method} ${path} to the control plane was cancelled`);
      const e = err as NodeJS.ErrnoException;
      const timedOut = /Timeout/i.test(e.code ?? '') || /timeout/i.test(e.message);
      throw new AppError(
        timedOut ? 'timeout' : 'unavailable',
        `cannot reach the control plane at ${this.base} (${e.code ?? e.message}); check its URL in Settings → Control node and ` +
          `that it is running`,
      );
    }
    const text = await res.body.text();
    const json = jsonOrNull(text);
    if (res.statusCode >= 400) {
      const parsed = errorBody.safeParse(json);
      const said = parsed.success ? parsed.data.error.message : text.slice(0, 200) || `HTTP ${res.statusCode}`;
      if (res.statusCode === 401) {
        throw new AppError(
          'unauthorized',
          `the control plane refused the token (401: ${said}); save a valid control-plane token in Settings → Control node`,
        );
      }
      if (res.statusCode === 404 && method === 'DELETE') return { status: 404, json };
      throw new AppError(codeFor(res.statusCode), `control plane ${method} ${path} answered ${res.statusCode}: ${said}`);
    }
    return { status: res.statusCode, json };
  }

  private parse<T>(schema: z.ZodType<T>, json: unknown, what: string): T {
    const r = schema.safeParse(json);
    if (!r.success) {
      throw new AppError(
        'unavailable',
        `the control plane sent ${what} this client cannot read (${listZodIssues(r.error)}); check that the URL points at a POV ` +
          `Desk control plane`,
      );
    }
    return r.data;
  }

  async mintEnrolmentCode(povId: string, signal?: AbortSignal): Promise<EnrolmentCode> {
    const { json } = await this.send('POST', '/v1/enrolment-codes', { povId }, signal);
    const code = this.parse(enrolmentCodeSchema, json, 'an enrolment code');
    const now = (this.opts.now?.() ?? new Date()).getTime();
    const expires = Date.parse(code.expiresAt);
    if (expires <= now || expires > now + ENROLMENT_CODE_TTL_MS + 60_000) {
      throw new AppError(
        'unavailable',
        `the control plane minted a code expiring at ${code.expiresAt}; a code must live at most 15 minutes from now (check the ` +
          `control plane's clock)`,
      );
    }
    return code;
  }

  async mintJoinToken(agentId: string, signal?: AbortSignal): Promise<JoinToken> {
    const { json } = await this.send('POST', `/v1/agents/${encodeURIComponent(agentId)}/join-token`, {}, signal);
    return this.parse(joinTokenSchema, json, 'a join token');
  }

  async enrolmentState(agentId: string, signal?: AbortSignal): Promise<EnrolmentState> {
    const { json } = await this.send('GET', `/v1/agents/${encodeURIComponent(agentId)}`, undefined, signal);
    return this.parse(enrolmentStateSchema, json, 'an agent state');
  }

  async revoke(agentId: string, signal?: AbortSignal): Promise<'revoked' | 'already_gone'> {
    const { status } = await this.send('DELETE', `/v1/agents/${encodeURIComponent(agentId)}`, undefined, signal);
    return status === 404 ? 'already_gone' : 'revoked';
  }

  async spire(signal?: AbortSignal): Promise<SpireInfo | null> {
    const { json } = await this.send('GET', '/v1/spire', undefined, signal);
    const r = z.object({ enabled: z.boolean() }).loose().safeParse(json);
    if (r.success && r.data.enabled === false) return null;
    const { enabled: _ignored, ...rest } = (json ?? {}) as Record<string, unknown>;
    return this.parse(spireInfoSchema, rest, 'SPIRE settings');
  }
}
