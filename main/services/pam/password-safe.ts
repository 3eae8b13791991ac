import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, listZodIssues } from '../../../shared/contract/errors';
import { deleteOutcome, replyError, send, type HttpOptions, type HttpReply } from './http';
import { checkCredentialUrl } from '../../../shared/url-policy';

/**
 * Password Safe's public API v3 (no official OpenAPI; field names and rules from BeyondTrust's Go
 * client, docs/pam.md). A session: PS-Auth header (or an OAuth bearer from Auth/Connect/Token) on
 * Auth/SignAppIn sets a session cookie, every call carries it and ?version=, Auth/Signout ends it.
 */
export const PS_PRODUCT = 'Password Safe';
export const PS_API_VERSION = '3.1';
const REMEDY = "check the Password Safe URL and API registration in the POV's Access panel";

export interface PsTenant {
  url: string;
  /** PS-Auth */
  apiKey?: string;
  runAs?: string;
  runAsPassword?: string;
  /** OAuth */
  clientId?: string;
  clientSecret?: string;
}

const num = lazySchema(() => z.number().int());
export const workgroupSchema = lazySchema(() => z.object({ ID: num, Name: z.string() }).loose());
export const assetSchema = lazySchema(() =>
  z.object({ AssetID: num, WorkgroupID: num, AssetName: z.string(), IPAddress: z.string() }).loose(),
);
export const managedSystemSchema = lazySchema(() =>
  z.object({ ManagedSystemID: num, AssetID: num.nullable().optional(), SystemName: z.string().optional() }).loose(),
);
export const functionalAccountSchema = lazySchema(() =>
  z.object({ FunctionalAccountID: num, PlatformID: num, AccountName: z.string(), DisplayName: z.string().nullable().optional() }).loose(),
);
export const managedAccountSchema = lazySchema(() =>
  z.object({ ManagedAccountID: num.optional(), AccountId: num.optional(), AccountName: z.string() }).loose(),
);
export const platformSchema = lazySchema(() => z.object({ PlatformID: num, Name: z.string(), ShortName: z.string().optional() }).loose());

type Method = 'GET' | 'POST' | 'DELETE';

export class PasswordSafeClient {
  private readonly base: string;
  private cookie: string | null = null;

  constructor(
    private readonly tenant: PsTenant,
    private readonly opts: HttpOptions & { signal?: AbortSignal } = {},
  ) {
    checkCredentialUrl('the Password Safe URL', tenant.url, "fix it in the POV's Access panel");
    this.base = `${tenant.url.replace(/\/+$/, '')}/BeyondTrust/api/public/v3`;
  }

  private url(path: string) {
    return `${this.base}/${path}${path.includes('?') ? '&' : '?'}version=${PS_API_VERSION}`;
  }

  private sig() {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  /** Signs in, runs `fn`, and always signs out (a session left open counts against the user). */
  async session<T>(fn: (ps: this) => Promise<T>): Promise<T> {
    await this.signIn();
    try {
      return await fn(this);
    } finally {
      await this.signOut().catch(() => undefined);
    }
  }

  async signIn(): Promise<void> {
    let authorization: string;
    if (this.tenant.clientId && this.tenant.clientSecret) {
      const r = await send(
        PS_PRODUCT,
        {
          method: 'POST',
          url: this.url('Auth/Connect/Token'),
          form: { grant_type: 'client_credentials', client_id: this.tenant.clientId, client_secret: this.tenant.clientSecret },
          ...this.sig(),
        },
        this.opts,
      );
      const t = z
        .object({ access_token: z.string().min(1) })
        .loose()
        .safeParse(r.json);
      if (r.status !== 200 || !t.success) {
        throw new AppError(
          'unauthorized',
          `Password Safe refused the OAuth client (${r.status}); check the API registration's client id and secret in the POV's ` +
            `Access panel`,
        );
      }
      authorization = `Bearer ${t.data.access_token}`;
    } else if (this.tenant.apiKey && this.tenant.runAs) {
      authorization =
        `PS-Auth key=${this.tenant.apiKey}; ` +
        `runas=${this.tenant.runAs};${this.tenant.runAsPassword ? ` pwd=[${this.tenant.runAsPassword}];` : ''}`;
    } else {
      throw new AppError(
        'unauthorized',
        "no Password Safe credentials are saved: enter an API key with its run-as user, or an OAuth client, in the POV's Access panel",
      );
    }
    const r = await send(
      PS_PRODUCT,
      { method: 'POST', url: this.url('Auth/SignAppIn'), headers: { authorization }, json: {}, ...this.sig() },
      this.opts,
    );
    if (r.status === 401)
      throw new AppError(
        'unauthorized',
        `Password Safe refused the sign-in (401: ${said(r)}); check the API key, run-as user and the registration's IP rules`,
      );
    if (r.status === 403)
      throw new AppError(
        'forbidden',
        'Password Safe answered 403 to SignAppIn: the licence is invalid or the run-as user may not use the API',
      );
    if (r.status === 410)
      throw new AppError('unavailable', `Password Safe answered 410: API version ${PS_API_VERSION} is disabled on this instance`, {
        reason: 'server',
      });
    if (r.status >= 400) throw replyError(PS_PRODUCT, 'SignAppIn', r, said(r), REMEDY);
    const set = r.headers['set-cookie'] ?? '';
    const m = /(ASP\.NET_SessionId=[^;,\s]+)/.exec(set);
    if (!m)
      throw new AppError('unavailable', 'Password Safe signed in but set no session cookie; check that the URL is the Password Safe host');
    this.cookie = m[1]!;
  }

  async signOut(): Promise<void> {
    if (!this.cookie) return;
    const cookie = this.cookie;
    this.cookie = null;
    await send(PS_PRODUCT, { method: 'POST', url: this.url('Auth/Signout'), headers: { cookie }, json: {} }, this.opts);
  }

  async call(method: Method, path: string, body?: unknown): Promise<HttpReply> {
    if (!this.cookie) throw new AppError('internal', 'Password Safe call outside a session');
    return send(
      PS_PRODUCT,
      { method, url: this.url(path), headers: { cookie: this.cookie }, ...(body !== undefined ? { json: body } : {}), ...this.sig() },
      this.opts,
    );
  }

  private async ok<T>(method: Method, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    const r = await this.call(method, path, body);
    if (r.status >= 400)
      throw replyError(
        PS_PRODUCT,
        `${method} ${path}`,
        r,
        said(r),
        r.status === 403 ? "give the run-as user's group the Password Safe feature permissions for assets and managed systems" : REMEDY,
      );
    const p = schema.safeParse(r.json);
    if (!p.success)
      throw new AppError('unavailable', `Password Safe sent ${path} in a shape this client cannot read (${listZodIssues(p.error)})`);
    return p.data;
  }

  /** DELETE; 404 means already gone. */
  async remove(path: string): Promise<'deleted' | 'already_gone'> {
    const r = await this.call('DELETE', path);
    return deleteOutcome(PS_PRODUCT, `DELETE ${path}`, r, said(r), REMEDY);
  }

  /** A list endpoint: a bare array, or {TotalCount, Data} when paged. */
  private list<T>(path: string, schema: z.ZodType<T>): Promise<T[]> {
    return this.ok(
      'GET',
      path,
      z.union([
        z.array(schema),
        z
          .object({ Data: z.array(schema) })
          .loose()
          .transform((d) => d.Data),
      ]),
    );
  }

  platforms() {
    return this.list('Platforms', platformSchema);
  }
  workgroups() {
    return this.list('Workgroups', workgroupSchema);
  }
  createWorkgroup(name: string) {
    return this.ok('POST', 'Workgroups', workgroupSchema, { Name: name });
  }
  assets(workgroupId: number) {
    return this.list(`Workgroups/${workgroupId}/Assets`, assetSchema);
  }
  createAsset(
    workgroupId: number,
    body: { IPAddress: string; AssetName: string; DnsName?: string; OperatingSystem: string; Description: string },
  ) {
    return this.ok('POST', `Workgroups/${workgroupId}/Assets`, assetSchema, body);
  }
  /** The asset's managed system, or null (404 or an empty answer). */
  async managedSystemOf(assetId: number) {
    const r = await this.call('GET', `Assets/${assetId}/ManagedSystems`);
    if (r.status === 404) return null;
    if (r.status >= 400) throw replyError(PS_PRODUCT, 'GET ManagedSystems', r, said(r), REMEDY);
    const p = z.union([z.array(managedSystemSchema), managedSystemSchema.transform((m) => [m])]).safeParse(r.json);
    return p.success ? (p.data[0] ?? null) : null;
  }
  async managedSystem(id: number) {
    const r = await this.call('GET', `ManagedSystems/${id}`);
    if (r.status === 404) return null;
    if (r.status >= 400) throw replyError(PS_PRODUCT, 'GET ManagedSystems', r, said(r), REMEDY);
    return managedSystemSchema.parse(r.json);
  }
  createManagedSystem(assetId: number, body: Record<string, unknown>) {
    return this.ok('POST', `Assets/${assetId}/ManagedSystems`, managedSystemSchema, body);
  }
  functionalAccounts() {
    return this.list('FunctionalAccounts', functionalAccountSchema);
  }
  createFunctionalAccount(body: { PlatformID: number; AccountName: string; DisplayName: string; Password?: string; Description: string }) {
    return this.ok('POST', 'FunctionalAccounts', functionalAccountSchema, body);
  }
  managedAccounts(systemId: number) {
    return this.list(`ManagedSystems/${systemId}/ManagedAccounts`, managedAccountSchema);
  }
  createManagedAccount(systemId: number, body: { AccountName: string; AutoManagementFlag: boolean; Description: string }) {
    return this.ok('POST', `ManagedSystems/${systemId}/ManagedAccounts`, managedAccountSchema, body);
  }
}

function said(r: HttpReply): string {
  if (typeof r.json === 'string') return r.json.slice(0, 200);
  const j = r.json as { Message?: unknown; message?: unknown } | null;
  if (j && typeof j === 'object') return String(j.Message ?? j.message ?? '').slice(0, 200);
  return r.text.slice(0, 200);
}
