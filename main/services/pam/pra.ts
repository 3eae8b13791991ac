import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, listZodIssues } from '../../../shared/contract/errors';
import { deleteOutcome, replyError, send, type HttpOptions, type HttpReply } from './http';
import { checkCredentialUrl } from '../../../shared/url-policy';

/**
 * The PRA Configuration API (spec: pra-configuration-api.openapi.yaml, docs/pam.md). OAuth
 * client credentials at /oauth2/token (a token lives 3600 s; at most 30 live per API account, so
 * one token is cached and reused); base /api/config/v1; integers as JSON numbers; an unknown
 * query parameter or body field answers 401, so only fields the spec names are ever sent.
 */
export const PRA_PRODUCT = 'PRA';
const REMEDY = "check the PRA site and API account in the POV's Access panel";

const id = lazySchema(() => z.number().int().positive());
export const jumpointSchema = lazySchema(() =>
  z
    .object({
      id,
      name: z.string(),
      code_name: z.string().optional(),
      platform: z.string(),
      clustered: z.boolean().optional(),
      connected: z.boolean().optional(),
      docker_deploy_key: z.string().nullable().optional(),
    })
    .loose(),
);
export type Jumpoint = z.infer<typeof jumpointSchema>;
export const jumpGroupSchema = lazySchema(() => z.object({ id, name: z.string(), code_name: z.string().optional() }).loose());
export const jumpItemSchema = lazySchema(() =>
  z.object({ id, name: z.string(), jumpoint_id: id, hostname: z.string(), jump_group_id: id, tag: z.string().optional() }).loose(),
);
export type JumpItem = z.infer<typeof jumpItemSchema>;
const nodeSchema = lazySchema(() =>
  z
    .object({ id: id.optional(), hostname: z.string().optional(), private_ip: z.string().optional(), public_ip: z.string().optional() })
    .loose(),
);
const tokenSchema = lazySchema(() =>
  z.object({ access_token: z.string().min(1), token_type: z.string(), expires_in: z.number().positive() }).loose(),
);

export type JumpItemType = 'shell-jump' | 'remote-rdp';

export interface PraTenant {
  site: string;
  clientId: string;
  clientSecret: string;
}

export class PraClient {
  private token: { value: string; until: number } | null = null;
  private readonly site: string;

  constructor(
    private readonly tenant: PraTenant,
    private readonly opts: HttpOptions & { now?: () => number; signal?: AbortSignal } = {},
  ) {
    checkCredentialUrl('the PRA site URL', tenant.site, "fix it in the POV's Access panel");
    this.site = tenant.site.replace(/\/+$/, '');
  }

  private now() {
    return this.opts.now?.() ?? Date.now();
  }

  private async bearer(fresh = false): Promise<string> {
    if (!fresh && this.token && this.token.until > this.now()) return this.token.value;
    const basic = Buffer.from(`${this.tenant.clientId}:${this.tenant.clientSecret}`).toString('base64');
    const r = await send(
      PRA_PRODUCT,
      {
        method: 'POST',
        url: `${this.site}/oauth2/token`,
        headers: { authorization: `Basic ${basic}` },
        form: { grant_type: 'client_credentials' },
        ...this.sig(),
      },
      this.opts,
    );
    if (r.status !== 200) {
      throw r.status === 401 || r.status === 400
        ? new AppError(
            'unauthorized',
            `PRA refused the API account's client id/secret (${r.status}); copy the OAuth client id and secret of an API account ` +
              `with Configuration API access into the POV's Access panel`,
          )
        : replyError(PRA_PRODUCT, 'token request', r, said(r), REMEDY);
    }
    const t = tokenSchema.safeParse(r.json);
    if (!t.success) throw new AppError('unavailable', `PRA sent a token this client cannot read; check that ${this.site} is a PRA site`);
    // Renew a minute early: a token used as it expires answers 401 mid-job.
    this.token = { value: t.data.access_token, until: this.now() + Math.max(0, t.data.expires_in - 60) * 1000 };
    return t.data.access_token;
  }

  private sig() {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  /** One API call; a 401 with a cached token fetches one new token and tries once more. */
  async api(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    opts: { query?: Record<string, string | number>; body?: unknown } = {},
  ): Promise<HttpReply> {
    const qs = opts.query
      ? `?${new URLSearchParams(Object.entries(opts.query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`
      : '';
    const url = `${this.site}/api/config/v1${path}${qs}`;
    for (let attempt = 0; ; attempt++) {
      const token = await this.bearer(attempt > 0);
      const r = await send(
        PRA_PRODUCT,
        {
          method,
          url,
          headers: { authorization: `Bearer ${token}` },
          ...(opts.body !== undefined ? { json: opts.body } : {}),
          ...this.sig(),
        },
        this.opts,
      );
      if (r.status === 401 && attempt === 0) continue;
      if (r.status === 401) {
        throw new AppError(
          'unauthorized',
          `PRA answered 401 to ${method} ${path}${said(r) ? ` (${said(r)})` : ''}: the token was refused, or the request named a ` +
            `field PRA does not know; ${REMEDY}`,
        );
      }
      return r;
    }
  }

  private async ok(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    opts: { query?: Record<string, string | number>; body?: unknown } = {},
  ): Promise<HttpReply> {
    const r = await this.api(method, path, opts);
    if (r.status >= 400) {
      const remedy =
        r.status === 403 ? 'give the API account Configuration API permission (and Allow Access to Vault accounts if used)' : REMEDY;
      throw replyError(PRA_PRODUCT, `${method} ${path}`, r, said(r), remedy);
    }
    return r;
  }

  /** Walks every page (per_page 100, X-BT-Pagination-Last-Page). */
  async list<T>(path: string, schema: z.ZodType<T>, filters: Record<string, string | number> = {}): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; ; page++) {
      const r = await this.ok('GET', path, { query: { ...filters, per_page: 100, current_page: page } });
      const arr = z.array(schema).safeParse(r.json);
      if (!arr.success)
        throw new AppError('unavailable', `PRA sent a list for ${path} this client cannot read (${listZodIssues(arr.error)})`);
      out.push(...arr.data);
      const last = Number(r.headers['x-bt-pagination-last-page'] ?? page);
      if (!Number.isFinite(last) || page >= last || arr.data.length === 0) return out;
    }
  }

  private async create<T>(path: string, schema: z.ZodType<T>, body: Record<string, unknown>): Promise<T> {
    const r = await this.ok('POST', path, { body });
    const p = schema.safeParse(r.json);
    if (!p.success) throw new AppError('unavailable', `PRA created ${path} but sent a body this client cannot read`);
    return p.data;
  }

  /** DELETE; 404 means already gone. */
  async remove(path: string): Promise<'deleted' | 'already_gone'> {
    const r = await this.api('DELETE', path);
    return deleteOutcome(PRA_PRODUCT, `DELETE ${path}`, r, said(r), REMEDY);
  }

  async findJumpoint(codeName: string): Promise<Jumpoint | null> {
    return (await this.list('/jumpoint', jumpointSchema, { code_name: codeName }))[0] ?? null;
  }
  createJumpoint(body: {
    name: string;
    code_name: string;
    platform: 'linux-x86';
    clustered: true;
    shell_jump_enabled: true;
    protocol_tunnel_enabled: true;
    external_jump_item_network_id: string;
    comments: string;
  }) {
    return this.create('/jumpoint', jumpointSchema, body);
  }
  async getJumpoint(jumpointId: number): Promise<Jumpoint | null> {
    const r = await this.api('GET', `/jumpoint/${jumpointId}`);
    if (r.status === 404) return null;
    if (r.status >= 400) throw replyError(PRA_PRODUCT, 'GET /jumpoint', r, said(r), REMEDY);
    return jumpointSchema.parse(r.json);
  }
  /** The Jumpoint's nodes (the spec shows one object; a cluster has up to 10, so both are read). */
  async jumpointNodes(jumpointId: number): Promise<z.infer<typeof nodeSchema>[]> {
    const r = await this.ok('GET', `/jumpoint/${jumpointId}/node`);
    const arr = z.union([z.array(nodeSchema), nodeSchema.transform((n) => [n])]).safeParse(r.json);
    return arr.success ? arr.data : [];
  }

  async findJumpGroup(codeName: string) {
    return (await this.list('/jump-group', jumpGroupSchema, { code_name: codeName }))[0] ?? null;
  }
  createJumpGroup(body: { name: string; code_name: string; comments: string }) {
    return this.create('/jump-group', jumpGroupSchema, body);
  }

  async findJumpItem(type: JumpItemType, jumpointId: number, name: string): Promise<JumpItem | null> {
    return (await this.list(`/jump-item/${type}`, jumpItemSchema, { jumpoint_id: jumpointId, name }))[0] ?? null;
  }
  createShellJump(body: {
    name: string;
    jumpoint_id: number;
    hostname: string;
    protocol: 'ssh';
    port: number;
    jump_group_id: number;
    tag: string;
    comments: string;
  }) {
    return this.create('/jump-item/shell-jump', jumpItemSchema, body);
  }
  createRemoteRdp(body: { name: string; jumpoint_id: number; hostname: string; jump_group_id: number; tag: string; comments: string }) {
    return this.create('/jump-item/remote-rdp', jumpItemSchema, body);
  }
}

function said(r: HttpReply): string {
  const j = r.json as { message?: unknown; errors?: Record<string, unknown> } | null;
  if (!j || typeof j !== 'object') return r.text.slice(0, 200);
  const bag =
    j.errors && typeof j.errors === 'object'
      ? Object.entries(j.errors).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`)
      : [];
  return [typeof j.message === 'string' ? j.message : '', ...bag].filter(Boolean).join('; ');
}
