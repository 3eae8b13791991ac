/**
 * OIDC for a cluster's vm-manager: the device-code login (RFC 8628) against the cluster's issuer
 * and the refresh_token grant. The bearer sent to vm-manager is the id_token (what the cluster's
 * OAuth guard and muster check), else the access_token. Every answer of the issuer is validated.
 */
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { exchange, type HttpOptions } from './http';

export const discoveryDoc = lazySchema(() => z.object({
  issuer: z.string().url(),
  token_endpoint: z.string().url(),
  device_authorization_endpoint: z.string().url(),
}));
export type Discovery = z.infer<typeof discoveryDoc>;

export const deviceAuthorization = lazySchema(() => z.object({
  device_code: z.string().min(1),
  user_code: z.string().min(1),
  verification_uri: z.string().url(),
  verification_uri_complete: z.string().url().optional(),
  expires_in: z.number().int().positive(),
  interval: z.number().int().positive().optional(),
}));
export type DeviceAuthorization = z.infer<typeof deviceAuthorization>;

const tokenAnswer = lazySchema(() => z.object({
  access_token: z.string().min(1),
  token_type: z.string(),
  expires_in: z.number().positive().optional(),
  refresh_token: z.string().min(1).optional(),
  id_token: z.string().min(1).optional(),
}));
const tokenError = lazySchema(() => z.object({ error: z.string(), error_description: z.string().optional() }));

/** What the app keeps in the keychain (one JSON value) after a login. */
export const storedTokens = lazySchema(() => z
  .object({ bearer: z.string().min(1), refreshToken: z.string().nullable(), expiresAt: z.number().nullable(), issuer: z.string(), clientId: z.string() })
  .strict());
export type StoredTokens = z.infer<typeof storedTokens>;

export class OidcError extends Error {
  /** relogin: the refresh token is gone or refused; only a new device login helps */
  constructor(message: string, readonly relogin: boolean) {
    super(message);
    this.name = 'OidcError';
  }
}

const form = (fields: Record<string, string>) => Buffer.from(new URLSearchParams(fields).toString());
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' };

function parseJson<S extends z.ZodType>(what: string, schema: S, text: string): z.output<S> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new OidcError(`the issuer's ${what} is not JSON: ${text.slice(0, 120)}`, false);
  }
  const r = schema.safeParse(v);
  if (!r.success) throw new OidcError(`the issuer's ${what} lacks ${r.error.issues.map((i) => i.path.join('.') || 'fields').join(', ')}`, false);
  return r.data;
}

/** POST to an endpoint that is a full URL. */
function post(url: string, fields: Record<string, string>, http: HttpOptions) {
  const u = new URL(url);
  return exchange(u.origin, u.pathname + u.search, { method: 'POST', headers: FORM, body: form(fields) }, http);
}

export async function discover(issuer: string, http: HttpOptions): Promise<Discovery> {
  const base = issuer.replace(/\/+$/, '');
  const u = new URL(base);
  const a = await exchange(u.origin, `${u.pathname.replace(/\/+$/, '')}/.well-known/openid-configuration`, { method: 'GET', headers: { Accept: 'application/json' } }, http);
  if (a.status !== 200) throw new OidcError(`the issuer ${base} answered ${a.status} to its discovery document; check the issuer URL`, false);
  const d = parseJson('discovery document', discoveryDoc, a.text);
  if (d.issuer.replace(/\/+$/, '') !== base) throw new OidcError(`the discovery document names issuer ${d.issuer}, not ${base}; use exactly the issuer URL`, false);
  for (const ep of [d.token_endpoint, d.device_authorization_endpoint]) {
    if (new URL(ep).protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(ep).hostname)) {
      throw new OidcError(`the issuer's endpoint ${ep} is not https`, false);
    }
  }
  return d;
}

export async function startDeviceLogin(d: Discovery, clientId: string, scope: string, http: HttpOptions): Promise<DeviceAuthorization> {
  const a = await post(d.device_authorization_endpoint, { client_id: clientId, scope }, http);
  if (a.status !== 200) {
    const e = tokenError.safeParse(safeJson(a.text));
    throw new OidcError(`the issuer refused the device login (${a.status}${e.success ? `: ${e.data.error}${e.data.error_description ? `, ${e.data.error_description}` : ''}` : ''}); check the client id`, false);
  }
  return parseJson('device authorization', deviceAuthorization, a.text);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function toStored(t: z.infer<typeof tokenAnswer>, d: Discovery, clientId: string, previousRefresh: string | null, now: number): StoredTokens {
  const bearer = t.id_token ?? t.access_token;
  return { bearer, refreshToken: t.refresh_token ?? previousRefresh, expiresAt: jwtExpiry(bearer) ?? (t.expires_in ? now + t.expires_in * 1000 : null), issuer: d.issuer, clientId };
}

/** The exp claim of a JWT (ms), read without verifying: only to refresh before the server refuses it. */
export function jwtExpiry(token: string): number | null {
  const part = token.split('.')[1];
  if (!part) return null;
  try {
    const exp = (JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
}

export interface PollOptions {
  signal?: AbortSignal;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Polls the token endpoint until the person approved the code (slow_down adds 5 s, as RFC 8628 says). */
export async function pollDeviceToken(d: Discovery, clientId: string, auth: DeviceAuthorization, http: HttpOptions, o: PollOptions = {}): Promise<StoredTokens> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? defaultSleep;
  let interval = (auth.interval ?? 5) * 1000;
  const deadline = now() + auth.expires_in * 1000;
  for (;;) {
    await sleep(interval, o.signal);
    if (o.signal?.aborted) throw new OidcError('the login was cancelled', true);
    const a = await post(d.token_endpoint, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: auth.device_code, client_id: clientId }, http);
    if (a.status === 200) return toStored(parseJson('token answer', tokenAnswer, a.text), d, clientId, null, now());
    const e = tokenError.safeParse(safeJson(a.text));
    const code = e.success ? e.data.error : `HTTP ${a.status}`;
    if (code === 'authorization_pending') {
      // keep polling
    } else if (code === 'slow_down') {
      interval += 5000;
    } else if (code === 'access_denied') {
      throw new OidcError('the login was denied at the issuer', true);
    } else if (code === 'expired_token') {
      throw new OidcError('the login code expired before it was approved; start the login again', true);
    } else {
      throw new OidcError(`the issuer refused the login: ${code}${e.success && e.data.error_description ? ` (${e.data.error_description})` : ''}`, true);
    }
    if (now() > deadline) throw new OidcError('the login code expired before it was approved; start the login again', true);
  }
}

/** The refresh_token grant; a refused refresh token means a new login (relogin: true). */
export async function refreshTokens(d: Discovery, t: StoredTokens, http: HttpOptions, now = Date.now()): Promise<StoredTokens> {
  if (!t.refreshToken) throw new OidcError('the login has expired and the issuer gave no refresh token; log in again', true);
  const a = await post(d.token_endpoint, { grant_type: 'refresh_token', refresh_token: t.refreshToken, client_id: t.clientId }, http);
  if (a.status === 200) return toStored(parseJson('token answer', tokenAnswer, a.text), d, t.clientId, t.refreshToken, now);
  const e = tokenError.safeParse(safeJson(a.text));
  if (a.status === 400 || a.status === 401) throw new OidcError(`the issuer refused to refresh the login (${e.success ? e.data.error : a.status}); log in again`, true);
  throw new OidcError(`the issuer answered ${a.status} to a refresh; try again`, false);
}
