/**
 * OIDC for a cluster's vm-manager, through openid-client (docs/decisions/security.md): discovery, the
 * device-code login (RFC 8628: authorization_pending, slow_down) and the refresh_token grant. The
 * bearer sent to vm-manager is the id_token (what the cluster's OAuth guard and muster check),
 * else the access_token. An id_token is verified before it is stored or sent: issuer, audience,
 * expiry and iat by openid-client's claim checks, its signature against the issuer's JWKS
 * (enableNonRepudiationChecks). openid-client is loaded on first use (cold start).
 */
import type { Configuration, CustomFetch, DeviceAuthorizationResponse, TokenEndpointResponse } from 'openid-client';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { isLoopbackHostname } from '../../shared/url-policy';
import type { HttpOptions } from './http';

/** A discovered issuer, bound to the app's client id (a public client: no secret). */
export interface Discovery {
  issuer: string;
  clientId: string;
  config: Configuration;
}

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string | undefined;
  expires_in: number;
  interval?: number | undefined;
}

/** What the app keeps in the keychain (one JSON value) after a login. */
export const storedTokens = lazySchema(() =>
  z
    .object({
      bearer: z.string().min(1),
      refreshToken: z.string().nullable(),
      expiresAt: z.number().nullable(),
      issuer: z.string(),
      clientId: z.string(),
    })
    .strict(),
);
export type StoredTokens = z.infer<typeof storedTokens>;

export class OidcError extends Error {
  /** relogin: the refresh token is gone or refused; only a new device login helps */
  constructor(
    message: string,
    readonly relogin: boolean,
  ) {
    super(message);
    this.name = 'OidcError';
  }
}

const client = () => import('openid-client');

/** fetch with the cluster's own CA (undici's, whose Agent takes one) and the timeout. */
async function fetcher(http: HttpOptions): Promise<CustomFetch> {
  const { Agent, fetch } = await import('undici');
  const dispatcher = http.ca ? new Agent({ connect: { ca: http.ca } }) : undefined;
  return (url, init) => {
    const signal = init.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(http.timeoutMs)]) : AbortSignal.timeout(http.timeoutMs);
    return fetch(url, { ...(init as object), signal, ...(dispatcher ? { dispatcher } : {}) } as Parameters<
      typeof fetch
    >[1]) as unknown as Promise<Response>;
  };
}

/** An error from openid-client (or the network) as one sentence; relogin where only a new login helps. */
async function explain(e: unknown, what: string, issuer: string): Promise<OidcError> {
  const oc = await client();
  if (e instanceof OidcError) return e;
  if (e instanceof oc.ResponseBodyError) {
    const said = `${e.error}${e.error_description ? ` (${e.error_description})` : ''}`;
    if (e.error === 'access_denied') return new OidcError('the login was denied at the issuer', true);
    if (e.error === 'expired_token') return new OidcError('the login code expired before it was approved; start the login again', true);
    if (e.error === 'invalid_client') return new OidcError(`the issuer refused ${what}: ${said}; check the client id`, false);
    if (what === 'to refresh the login' && (e.status === 400 || e.status === 401))
      return new OidcError(`the issuer refused to refresh the login (${said}); log in again`, true);
    return new OidcError(`the issuer refused ${what}: ${said}`, what !== 'the device login');
  }
  const err = e as Error & { code?: string; cause?: unknown };
  if (err?.name === 'AbortError' || err?.name === 'TimeoutError') return new OidcError(`${issuer} did not answer ${what} in time`, false);
  if (err?.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && err.cause instanceof Object && typeof (err.cause as Response).status === 'number') {
    return new OidcError(`the issuer ${issuer} answered ${(err.cause as Response).status} to ${what}; check the issuer URL`, false);
  }
  if (err?.code?.startsWith('OAUTH_')) {
    const verify = [
      'OAUTH_JWS_SIGNATURE_VERIFICATION_FAILED',
      'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
      'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
      'OAUTH_KEY_SELECTION_FAILED',
      'OAUTH_INVALID_RESPONSE',
    ];
    const why =
      err.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED'
        ? `${err.message}; use exactly the issuer URL its discovery document names`
        : err.message;
    if (verify.includes(err.code))
      return new OidcError(
        `the id_token from ${issuer} failed verification (${why}); nothing was stored: ask the cluster's administrator to check ` +
          `the issuer's keys`,
        false,
      );
    return new OidcError(`the issuer's answer to ${what} was refused (${why})`, false);
  }
  const cause = err?.cause as { message?: string; code?: string } | undefined;
  return new OidcError(
    `cannot reach the issuer ${issuer} (${cause?.code ?? cause?.message ?? err?.message ?? String(e)}); check the issuer URL and ` +
      `the CA bundle`,
    false,
  );
}

export async function discover(issuer: string, clientId: string, http: HttpOptions): Promise<Discovery> {
  const oc = await client();
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new OidcError(`the issuer ${JSON.stringify(issuer)} is not a URL`, false);
  }
  const insecure = url.protocol === 'http:' && isLoopbackHostname(url.hostname);
  try {
    const config = await oc.discovery(url, clientId, { token_endpoint_auth_method: 'none' }, oc.None(), {
      [oc.customFetch]: await fetcher(http),
      timeout: Math.ceil(http.timeoutMs / 1000),
      execute: insecure ? [oc.allowInsecureRequests, oc.enableNonRepudiationChecks] : [oc.enableNonRepudiationChecks],
    });
    const m = config.serverMetadata();
    if (!m.device_authorization_endpoint)
      throw new OidcError(
        `the issuer ${issuer} offers no device authorization endpoint (RFC 8628); ask for a client with the device flow`,
        false,
      );
    if (!m.jwks_uri) throw new OidcError(`the issuer ${issuer} publishes no JWKS, so its id_tokens cannot be verified`, false);
    return { issuer: m.issuer, clientId, config };
  } catch (e) {
    throw await explain(e, 'its discovery document', issuer);
  }
}

export async function startDeviceLogin(d: Discovery, scope: string): Promise<DeviceAuthorization> {
  const oc = await client();
  try {
    const a = await oc.initiateDeviceAuthorization(d.config, { scope });
    return a as DeviceAuthorizationResponse;
  } catch (e) {
    throw await explain(e, 'the device login', d.issuer);
  }
}

async function toStored(
  t: TokenEndpointResponse & { claims(): { exp: number } | undefined },
  d: Discovery,
  previousRefresh: string | null,
  now: number,
): Promise<StoredTokens> {
  // openid-client checked the id_token's claims and (non-repudiation) its signature before returning
  const claims = t.claims();
  const bearer = t.id_token ?? t.access_token;
  const expiresAt = claims ? claims.exp * 1000 : t.expires_in ? now + t.expires_in * 1000 : null;
  return { bearer, refreshToken: t.refresh_token ?? previousRefresh, expiresAt, issuer: d.issuer, clientId: d.clientId };
}

export interface PollOptions {
  signal?: AbortSignal | undefined;
  now?: () => number;
}

/** Polls until the person approved the code, as openid-client does it (slow_down adds 5 s); cancel aborts. */
export async function pollDeviceToken(d: Discovery, auth: DeviceAuthorization, o: PollOptions = {}): Promise<StoredTokens> {
  const oc = await client();
  const expiry = AbortSignal.timeout(auth.expires_in * 1000);
  const signal = o.signal ? AbortSignal.any([o.signal, expiry]) : expiry;
  try {
    const t = await oc.pollDeviceAuthorizationGrant(d.config, auth as DeviceAuthorizationResponse, undefined, { signal });
    return await toStored(t, d, null, (o.now ?? Date.now)());
  } catch (e) {
    if (o.signal?.aborted) throw new OidcError('the login was cancelled', true);
    if (expiry.aborted) throw new OidcError('the login code expired before it was approved; start the login again', true);
    throw await explain(e, 'the login', d.issuer);
  }
}

/** The refresh_token grant (rotation: the answer's refresh token replaces ours); a refused one means a new login. */
export async function refreshTokens(d: Discovery, t: StoredTokens, now = Date.now()): Promise<StoredTokens> {
  if (!t.refreshToken) throw new OidcError('the login has expired and the issuer gave no refresh token; log in again', true);
  const oc = await client();
  try {
    return await toStored(await oc.refreshTokenGrant(d.config, t.refreshToken), d, t.refreshToken, now);
  } catch (e) {
    throw await explain(e, 'to refresh the login', d.issuer);
  }
}
