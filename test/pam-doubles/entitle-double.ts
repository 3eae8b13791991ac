import { randomBytes, randomUUID } from 'node:crypto';
import { checkFields, Double, type Reply, type Req } from './server';

/**
 * Entitle's public API on loopback, from its spec (entitle-api-v3.openapi.json):
 * - Bearer token; lists answer {result: […], pagination: {page, perPage, totalResults,
 *   totalPages}}, page ≥ 1 and perPage 1–100 (else 400);
 * - GET /resources needs integrationId; POST /resources needs integration, name (2–50),
 *   multirole, requestable; DELETE answers {result: {ok}};
 * - agent tokens: the token itself is in the create answer only, never in a list or a GET;
 * - 429 with Retry-After when more than `burst` requests arrive in one second (and on demand
 *   with throttleNext(n)).
 */
const RESOURCE_FIELDS = {
  userDefinedDescription: { t: 'string', max: 2048 },
  userDefinedTags: { t: 'array' },
  allowedDurations: { t: 'array', nullable: true },
  maintainers: { t: 'array', nullable: true },
  prerequisitePermissions: { t: 'array', nullable: true },
  integration: { t: 'object', req: true },
  name: { t: 'string', req: true, min: 2, max: 50 },
  type: { t: 'string', min: 2, max: 50 },
  multirole: { t: 'boolean', req: true },
  roles: { t: 'array' },
  requestable: { t: 'boolean', req: true },
  workflow: { t: 'object', nullable: true },
  owner: { t: 'object', nullable: true },
} as const;

type Row = Record<string, unknown> & { id: string };

export class EntitleDouble extends Double {
  readonly token = `ent_${randomBytes(16).toString('hex')}`;
  readonly integrations = new Map<string, Row>();
  readonly resources = new Map<string, Row>();
  readonly agentTokens = new Map<string, Row & { secret: string }>();
  burst = 50;
  private throttle = 0;
  private readonly hits: number[] = [];

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  addIntegration(name: string, application: string): Row {
    const row: Row = { id: randomUUID(), name, application: { name: application } };
    this.integrations.set(row.id, row);
    return row;
  }

  /** The next n requests answer 429 with Retry-After: 1. */
  throttleNext(n: number) {
    this.throttle = n;
  }

  private page<T>(all: T[], r: Req): Reply {
    const page = r.query.page === undefined ? 1 : Number(r.query.page);
    const perPage = r.query.perPage === undefined ? 100 : Number(r.query.perPage);
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(perPage) || perPage < 1 || perPage > 100) {
      return { status: 400, body: { message: 'page must be ≥ 1 and perPage between 1 and 100' } };
    }
    return {
      status: 200,
      body: {
        result: all.slice((page - 1) * perPage, page * perPage),
        pagination: { page, perPage, totalResults: all.length, totalPages: Math.ceil(all.length / perPage) },
      },
    };
  }

  protected handle(r: Req): Reply {
    if (r.headers.authorization !== `Bearer ${this.token}`) return { status: 401, body: { message: 'Unauthorized' } };
    const t = this.now();
    while (this.hits.length && this.hits[0]! <= t - 1000) this.hits.shift();
    this.hits.push(t);
    if (this.throttle > 0 || this.hits.length > this.burst) {
      if (this.throttle > 0) this.throttle--;
      return { status: 429, headers: { 'Retry-After': '1' }, body: { message: 'Too Many Requests' } };
    }
    const m = /^\/public\/v1\/(integrations|resources|agentTokens)(?:\/([^/]+))?$/.exec(r.path);
    if (!m) return { status: 404, body: { message: 'Not Found' } };
    const [, what, id] = m;
    if (what === 'integrations' && r.method === 'GET' && !id) return this.page([...this.integrations.values()], r);
    if (what === 'resources') return this.resource(r, id);
    if (what === 'agentTokens') {
      if (r.method === 'POST' && !id) {
        const name = (r.json as { name?: unknown } | undefined)?.name;
        if (typeof name !== 'string' || !name) return { status: 400, body: { message: 'name is required' } };
        const row = { id: randomUUID(), name, secret: `eat_${randomBytes(24).toString('hex')}` };
        this.agentTokens.set(row.id, row);
        return { status: 201, body: { result: { id: row.id, name, token: row.secret } } };
      }
      if (r.method === 'GET' && !id)
        return this.page(
          [...this.agentTokens.values()].map(({ secret: _s, ...x }) => x),
          r,
        );
      const row = id ? this.agentTokens.get(id) : undefined;
      if (!row) return { status: 404, body: { message: 'Agent token not found' } };
      if (r.method === 'GET') return { status: 200, body: { result: { id: row.id, name: row.name } } };
      if (r.method === 'DELETE') return (this.agentTokens.delete(row.id), { status: 200, body: { result: { ok: true } } });
    }
    return { status: 405, body: { message: 'Method Not Allowed' } };
  }

  private resource(r: Req, id: string | undefined): Reply {
    if (r.method === 'GET' && !id) {
      const integ = r.query.integrationId;
      if (!integ) return { status: 400, body: { message: 'integrationId is required' } };
      const q = r.query.search?.toLowerCase();
      return this.page(
        [...this.resources.values()]
          .filter((x) => (x.integration as { id: string }).id === integ && (!q || String(x.name).toLowerCase().includes(q)))
          .map((x) => ({ id: x.id, integration: x.integration, name: x.name })),
        r,
      );
    }
    if (r.method === 'POST' && !id) {
      const body = r.json as Record<string, unknown> | undefined;
      if (!body || typeof body !== 'object') return { status: 400, body: { message: 'body must be an object' } };
      const { unknown, errors } = checkFields(body, RESOURCE_FIELDS);
      if (unknown.length) return { status: 400, body: { message: `unknown field(s): ${unknown.join(', ')}` } };
      if (Object.keys(errors).length) return { status: 400, body: { message: Object.values(errors).flat().join(' ') } };
      const integ = this.integrations.get(String((body.integration as { id?: unknown }).id));
      if (!integ) return { status: 404, body: { message: 'Integration not found' } };
      const row: Row = {
        id: randomUUID(),
        name: body.name,
        integration: { id: integ.id, name: integ.name, application: integ.application },
        requestable: body.requestable,
        roles: body.roles ?? [],
        userDefinedDescription: body.userDefinedDescription ?? null,
      };
      this.resources.set(row.id, row);
      return { status: 201, body: { result: row } };
    }
    const row = id ? this.resources.get(id) : undefined;
    if (!row) return { status: 404, body: { message: 'Resource not found' } };
    if (r.method === 'GET') return { status: 200, body: { result: row } };
    if (r.method === 'DELETE') return (this.resources.delete(row.id), { status: 200, body: { ok: true } });
    return { status: 405, body: { message: 'Method Not Allowed' } };
  }
}
