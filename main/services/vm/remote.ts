/**
 * How the app authenticates to a remote (cluster) vm-manager: a static bearer token, or an OIDC
 * login to the cluster's issuer (device code; the tokens kept in the keychain as one value, each
 * id_token verified by main/vm-api/oidc.ts before it is kept, refreshed before they expire and
 * once after a 401). A refresh the issuer refuses means a new login: the call fails
 * `unauthorized` with details.relogin, which the page turns into a prompt.
 * Tokens go to the keychain and the logger's redaction list only, never to settings or logs.
 */
import { readFileSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { JOB_KIND } from '../../../shared/contract/job-kinds';
import type { BearerSource } from '../../vm-api/client';
import type { HttpOptions } from '../../vm-api/http';
import {
  discover,
  OidcError,
  pollDeviceToken,
  refreshTokens,
  startDeviceLogin,
  storedTokens,
  type Discovery,
  type StoredTokens,
} from '../../vm-api/oidc';
import { checkCredentialUrl } from '../../../shared/url-policy';
import type { VmConnection, VmLogin } from '../../../shared/contract/vm';
import type { JobRunner } from '../jobs/runner';
import type { Logger } from '../log/logger';
import type { SecretStore } from '../secrets/store';
import type { SettingsService } from '../settings/settings';

export const REMOTE_TOKEN_ACCOUNT = 'vm-manager-token';
export const OIDC_ACCOUNT = 'vm-manager-oidc';
export const KEYS = {
  mode: 'vm.mode',
  url: 'vm.remoteUrl',
  auth: 'vm.remoteAuth',
  issuer: 'vm.oidcIssuer',
  clientId: 'vm.oidcClientId',
  ca: 'vm.caBundle',
} as const;
/** Refresh this long before the token's expiry. */
const EARLY_MS = 60_000;

export interface RemoteDeps {
  settings: Pick<SettingsService, 'getValue' | 'setValue'>;
  secrets: SecretStore;
  log: Pick<Logger, 'addSecret' | 'info' | 'warn'>;
  now?: () => number;
}

export const relogin = (why: string) =>
  new AppError('unauthorized', `${why}: log in to the cluster's identity provider again (Local VMs → Connection → Log in)`, {
    relogin: true,
  });

/** The CA bundle (PEM) named in settings, read now; a bad file is a clear error. */
export function caBundle(settings: RemoteDeps['settings']): string | undefined {
  const path = settings.getValue(KEYS.ca);
  if (!path) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new AppError(
      'invalid_request',
      `the CA bundle ${path} cannot be read (${(e as Error).message}); fix the path on the Local VMs page (Connection)`,
    );
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new AppError('invalid_request', `the CA bundle ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return text;
}

export function httpOptions(settings: RemoteDeps['settings'], timeoutMs = 30_000): HttpOptions {
  return { timeoutMs, ca: caBundle(settings) };
}

/** The stored OIDC login, or null when none (or unreadable: treated as none). */
export async function readLogin(d: RemoteDeps): Promise<StoredTokens | null> {
  const raw = await d.secrets.get(OIDC_ACCOUNT);
  if (!raw) return null;
  try {
    const t = storedTokens.parse(JSON.parse(raw));
    d.log.addSecret(t.bearer);
    if (t.refreshToken) d.log.addSecret(t.refreshToken);
    return t;
  } catch {
    return null;
  }
}

export async function saveLogin(d: RemoteDeps, t: StoredTokens): Promise<void> {
  d.log.addSecret(t.bearer);
  if (t.refreshToken) d.log.addSecret(t.refreshToken);
  await d.secrets.set(OIDC_ACCOUNT, JSON.stringify(t));
}

/** The bearer source for the configured remote: static token or the OIDC login. */
export async function remoteBearer(d: RemoteDeps): Promise<BearerSource> {
  if (d.settings.getValue(KEYS.auth) !== 'oidc') {
    const token = await d.secrets.get(REMOTE_TOKEN_ACCOUNT);
    if (!token)
      throw new AppError(
        'unauthorized',
        'the remote vm-manager has no bearer token saved: set it on the Local VMs page (Connection), or switch back to the local manager',
      );
    d.log.addSecret(token);
    return { bearer: async () => token };
  }
  const issuer = d.settings.getValue(KEYS.issuer);
  if (!issuer) throw new AppError('invalid_request', 'OIDC login needs the issuer URL and client id (Local VMs → Connection)');
  const now = d.now ?? Date.now;
  let discovery: Discovery | null = null;
  const doRefresh = async (t: StoredTokens): Promise<StoredTokens> => {
    try {
      discovery ??= await discover(issuer, t.clientId, httpOptions(d.settings));
      const fresh = await refreshTokens(discovery, t, now());
      await saveLogin(d, fresh);
      d.log.info('vm-manager login refreshed', { issuer });
      return fresh;
    } catch (e) {
      if (e instanceof OidcError && e.relogin) {
        await d.secrets.delete(OIDC_ACCOUNT);
        throw relogin(e.message);
      }
      throw new AppError('unavailable', `refreshing the login at ${issuer} failed: ${(e as Error).message}`);
    }
  };
  return {
    bearer: async () => {
      const t = await readLogin(d);
      if (!t || t.issuer.replace(/\/+$/, '') !== issuer.replace(/\/+$/, '')) throw relogin('not logged in to the vm-manager');
      if (t.expiresAt !== null && t.expiresAt - EARLY_MS < now()) return (await doRefresh(t)).bearer;
      return t.bearer;
    },
    renew: async () => {
      const t = await readLogin(d);
      if (!t) throw relogin('not logged in to the vm-manager');
      return (await doRefresh(t)).bearer;
    },
  };
}

const authOf = (d: RemoteDeps): 'token' | 'oidc' => (d.settings.getValue(KEYS.auth) === 'oidc' ? 'oidc' : 'token');

export async function connectionView(
  d: RemoteDeps,
  mode: 'local' | 'remote',
  local: { readEndpoint(): { url: string; pid: number } | null; stateDir: string },
): Promise<VmConnection> {
  const auth = authOf(d);
  const common = {
    auth,
    oidcIssuer: d.settings.getValue(KEYS.issuer) || null,
    oidcClientId: d.settings.getValue(KEYS.clientId) || null,
    caBundle: d.settings.getValue(KEYS.ca) || null,
  };
  if (mode === 'remote') {
    const tokenSet = auth === 'oidc' ? (await readLogin(d)) !== null : !!(await d.secrets.get(REMOTE_TOKEN_ACCOUNT));
    return { mode, url: d.settings.getValue(KEYS.url), tokenSet, pid: null, stateDir: null, ...common };
  }
  const ep = local.readEndpoint();
  return { mode, url: ep?.url ?? null, tokenSet: ep !== null, pid: ep?.pid ?? null, stateDir: local.stateDir, ...common };
}

export interface ConnectionArgs {
  mode: 'local' | 'remote';
  url?: string | undefined;
  token?: string | undefined;
  auth?: 'token' | 'oidc' | undefined;
  oidcIssuer?: string | undefined;
  oidcClientId?: string | undefined;
  caBundle?: string | undefined;
}

/** Validates everything first, then saves: a refused change leaves the settings as they were. */
export async function saveConnection(d: RemoteDeps, args: ConnectionArgs): Promise<void> {
  if (args.caBundle) caBundle({ getValue: () => args.caBundle ?? null, setValue: () => undefined }); // a readable PEM, or a clear error
  if (args.mode === 'remote') {
    const url = args.url ?? d.settings.getValue(KEYS.url);
    if (!url) throw new AppError('invalid_request', 'a remote vm-manager needs its URL (https://host:port)');
    const auth = args.auth ?? authOf(d);
    if (auth === 'token') {
      if (/\s/.test(args.token ?? '')) throw new AppError('invalid_request', 'the token contains white space; paste it again');
      const token = args.token ?? (await d.secrets.get(REMOTE_TOKEN_ACCOUNT));
      if (!token) throw new AppError('invalid_request', 'a remote vm-manager needs its bearer token (the first time)');
      if (args.token) await d.secrets.set(REMOTE_TOKEN_ACCOUNT, args.token);
    } else {
      if (args.token)
        throw new AppError('invalid_request', 'with an OIDC login there is no token to paste: save the issuer and client id, then Log in');
      if (!(args.oidcIssuer ?? d.settings.getValue(KEYS.issuer)) || !(args.oidcClientId ?? d.settings.getValue(KEYS.clientId))) {
        throw new AppError('invalid_request', "an OIDC login needs the cluster's issuer URL and the client id");
      }
    }
    // Another issuer: the old login is of no use there.
    if (args.oidcIssuer !== undefined && args.oidcIssuer !== d.settings.getValue(KEYS.issuer)) await d.secrets.delete(OIDC_ACCOUNT);
    if (args.oidcIssuer !== undefined) d.settings.setValue(KEYS.issuer, args.oidcIssuer);
    if (args.oidcClientId !== undefined) d.settings.setValue(KEYS.clientId, args.oidcClientId);
    d.settings.setValue(KEYS.auth, auth);
    d.settings.setValue(KEYS.url, url);
  }
  if (args.caBundle !== undefined) d.settings.setValue(KEYS.ca, args.caBundle);
  d.settings.setValue(KEYS.mode, args.mode);
  d.log.info('vm-manager connection saved', { mode: args.mode, auth: authOf(d) });
}

/** Discovery and the device authorization now (their errors are the call's); the polling as a job. */
export async function startLogin(d: RemoteDeps, jobs: JobRunner, scope: string): Promise<VmLogin> {
  const issuer = d.settings.getValue(KEYS.issuer);
  const clientId = d.settings.getValue(KEYS.clientId);
  if (!issuer || !clientId)
    throw new AppError('invalid_request', "save the cluster's issuer URL and client id first (Local VMs → Connection)");
  checkCredentialUrl('the OIDC issuer URL', issuer, 'set an https:// issuer URL on the Local VMs page (Connection)');
  const http = httpOptions(d.settings);
  const wrap = (e: unknown) => (e instanceof OidcError ? new AppError(e.relogin ? 'unauthorized' : 'unavailable', e.message) : e);
  const disc = await discover(issuer, clientId, http).catch((e: unknown) => Promise.reject(wrap(e)));
  const auth = await startDeviceLogin(disc, scope).catch((e: unknown) => Promise.reject(wrap(e)));
  const jobId = jobs.start({ kind: JOB_KIND.vmLogin, title: `Log in to ${new URL(issuer).host}`, subject: 'vm:login' }, async (job) => {
    job.progress('waiting', null, `open ${auth.verification_uri} and enter ${auth.user_code}`);
    try {
      await saveLogin(d, await pollDeviceToken(disc, auth, { signal: job.signal }));
    } catch (e) {
      throw wrap(e);
    }
    job.log(`logged in at ${issuer}`);
    return { issuer };
  });
  return {
    jobId,
    userCode: auth.user_code,
    verificationUri: auth.verification_uri,
    verificationUriComplete: auth.verification_uri_complete ?? null,
    expiresIn: auth.expires_in,
  };
}
