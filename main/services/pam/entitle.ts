import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, listZodIssues } from '../../../shared/contract/errors';
import { deleteOutcome, replyError, send, type HttpOptions, type HttpReply } from './http';
import { checkCredentialUrl } from '../../../shared/url-policy';

/**
 * Entitle's public API (spec: entitle-api-v3.openapi.json). Bearer token; lists answer
 * {result, pagination: {page, perPage, totalResults, totalPages}} and are walked to the end;
 * 429/502 are retried honouring Retry-After (the shared helper), as Entitle's own client does.
 */
export const ENTITLE_PRODUCT = 'Entitle';
export const DEFAULT_ENTITLE_URL = 'https://api.entitle.io';
const REMEDY = "check the Entitle API token in the POV's Access panel";

const pagination = lazySchema(() =>
  z.object({ page: z.number(), perPage: z.number(), totalResults: z.number(), totalPages: z.number() }).loose(),
);
export const integrationSchema = lazySchema(() =>
  z.object({ id: z.string(), name: z.string(), application: z.object({ name: z.string() }).loose() }).loose(),
);
export const resourceSchema = lazySchema(() =>
  z.object({ id: z.string(), name: z.string(), integration: z.object({ id: z.string() }).loose().optional() }).loose(),
);

/** Entitle's PRA integration is recognised by its application's name (docs/pam.md: an assumption). */
export const PRA_APPLICATION = /privileged remote access|beyondtrust.*pra|^pra$/i;

export class EntitleClient {
  private readonly base: string;
  constructor(
    private readonly tenant: { url?: string | null; token: string },
    private readonly opts: HttpOptions & { signal?: AbortSignal } = {},
  ) {
    this.base = (tenant.url || DEFAULT_ENTITLE_URL).replace(/\/+$/, '');
    checkCredentialUrl('the Entitle URL', this.base, "fix it in the POV's Access panel");
  }

  async call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    opts: { query?: Record<string, string | number>; body?: unknown } = {},
  ): Promise<HttpReply> {
    const qs = opts.query
      ? `?${new URLSearchParams(Object.entries(opts.query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`
      : '';
    const r = await send(
      ENTITLE_PRODUCT,
      {
        method,
        url: `${this.base}/public/v1${path}${qs}`,
        headers: { authorization: `Bearer ${this.tenant.token}` },
        ...(opts.body !== undefined ? { json: opts.body } : {}),
        ...(this.opts.signal ? { signal: this.opts.signal } : {}),
      },
      this.opts,
    );
    if (r.status === 401) throw new AppError('unauthorized', `Entitle refused the API token (401); ${REMEDY}`);
    return r;
  }

  private async ok(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    opts: { query?: Record<string, string | number>; body?: unknown } = {},
  ) {
    const r = await this.call(method, path, opts);
    if (r.status >= 400)
      throw replyError(
        ENTITLE_PRODUCT,
        `${method} ${path}`,
        r,
        said(r),
        r.status === 403 ? 'give the token an admin role in Entitle' : REMEDY,
      );
    return r;
  }

  async list<T>(path: string, schema: z.ZodType<T>, query: Record<string, string | number> = {}): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; ; page++) {
      const r = await this.ok('GET', path, { query: { ...query, page, perPage: 100 } });
      const p = z
        .object({ result: z.array(schema), pagination })
        .loose()
        .safeParse(r.json);
      if (!p.success)
        throw new AppError('unavailable', `Entitle sent ${path} in a shape this client cannot read (${listZodIssues(p.error)})`);
      out.push(...p.data.result);
      if (page >= p.data.pagination.totalPages || p.data.result.length === 0) return out;
    }
  }

  /** One page of integrations: what Test reads. */
  async firstIntegrations() {
    const r = await this.ok('GET', '/integrations', { query: { page: 1, perPage: 1 } });
    return z
      .object({ result: z.array(integrationSchema), pagination })
      .loose()
      .parse(r.json);
  }

  async praIntegration() {
    const all = await this.list('/integrations', integrationSchema);
    return all.find((i) => PRA_APPLICATION.test(i.application.name)) ?? null;
  }

  async findResource(integrationId: string, name: string) {
    const found = await this.list('/resources', resourceSchema, { integrationId, search: name });
    return found.find((r) => r.name.toLowerCase() === name.toLowerCase()) ?? null;
  }

  async createResource(integrationId: string, name: string, description: string) {
    const r = await this.ok('POST', '/resources', {
      body: {
        integration: { id: integrationId },
        name,
        multirole: false,
        requestable: true,
        userDefinedDescription: description,
        roles: [{ name: 'Jump Group member' }],
      },
    });
    return z.object({ result: resourceSchema }).loose().parse(r.json).result;
  }

  async deleteResource(id: string): Promise<'deleted' | 'already_gone'> {
    const r = await this.call('DELETE', `/resources/${encodeURIComponent(id)}`);
    return deleteOutcome(ENTITLE_PRODUCT, 'DELETE /resources', r, said(r), REMEDY);
  }
}

function said(r: HttpReply): string {
  const j = r.json as { message?: unknown; error?: unknown } | null;
  if (j && typeof j === 'object') return String(j.message ?? j.error ?? '').slice(0, 200);
  return r.text.slice(0, 200);
}
