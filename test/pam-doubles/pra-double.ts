import { randomBytes } from 'node:crypto';
import { checkFields, Double, type Field, type Reply, type Req } from './server';

/**
 * A PRA appliance's Configuration API on loopback, written from the official spec
 * (pra-configuration-api.openapi.yaml v1.10; see ../shared/research/pam/README.md):
 * - POST /oauth2/token, Basic client_id:secret, grant_type=client_credentials → a bearer that
 *   lives 3600 s; at most 30 live tokens per API account (a 31st invalidates the oldest);
 * - 401 for a bad token AND for an unknown query parameter or body field; 422 {message, errors};
 *   integers must be JSON numbers; read-only fields are refused;
 * - ids are per type (shell-jump 1 and remote-rdp 1 are different items);
 * - per_page (5–100) / current_page paging with the X-BT-Pagination-* and Link headers;
 * - 20 requests/s per account → 429 with X-RateLimit-Limit / -Remaining (on every answer);
 * - a Jumpoint is `connected: false` until a node checks in with its docker_deploy_key
 *   (checkIn(), which the control-plane double calls when it runs the container);
 * - DELETE of a Jumpoint or a Jump Group deletes their jump items.
 */
const STR = (min: number, max: number, extra: Partial<Field> = {}): Field => ({ t: 'string', min, max, ...extra });
const ID: Field = { t: 'integer', min: 1, max: 2147483647 };
const CODE_NAME = STR(0, 64, { pattern: /^[a-zA-Z0-9_\\-]+$/ });

export const PRA_FIELDS = {
  jumpoint: {
    id: { ...ID, ro: true },
    name: STR(1, 255, { req: true }),
    platform: { t: 'string', req: true, enum: ['windows-x86', 'linux-x86'] },
    code_name: CODE_NAME,
    comments: STR(0, 1024),
    enabled: { t: 'boolean' },
    connected: { t: 'boolean', ro: true },
    clustered: { t: 'boolean' },
    shell_jump_enabled: { t: 'boolean' },
    external_jump_item_network_id: STR(0, 1024),
    protocol_tunnel_enabled: { t: 'boolean' },
    rdp_service_account_id: { ...ID, nullable: true },
    managed_ip_ranges: { t: 'array' },
    jzp_enabled: { t: 'boolean' },
    jzp_proxy_hostname: STR(0, 256),
    jzp_proxy_port: { t: 'integer', min: 1, max: 65535 },
    jzp_allow_http_get: { t: 'boolean' },
    jzp_client_address_restrictions_type: { t: 'string', enum: ['no_restriction', 'allow_all', 'deny_all'] },
    jzp_restricted_ips: { t: 'array' },
    docker_deploy_key: { t: 'string', ro: true },
    key_info: { t: 'string', ro: true },
  },
  'jump-group': {
    id: { ...ID, ro: true },
    name: STR(1, 255, { req: true }),
    code_name: CODE_NAME,
    comments: STR(0, 4096, { nullable: true }),
    ecm_group_id: ID,
  },
  'shell-jump': {
    id: { ...ID, ro: true },
    name: STR(1, 128, { req: true }),
    jumpoint_id: { ...ID, req: true },
    hostname: STR(1, 128, { req: true }),
    protocol: { t: 'string', req: true, enum: ['ssh', 'telnet'] },
    port: { t: 'integer', min: 1, max: 65535 },
    jump_group_id: { ...ID, req: true },
    jump_group_type: { t: 'string', enum: ['shared', 'personal'] },
    terminal: { t: 'string', enum: ['xterm', 'VT100'] },
    keep_alive: { t: 'integer', min: 0, max: 300 },
    tag: STR(0, 64),
    comments: STR(0, 1024),
    jump_policy_id: { ...ID, nullable: true },
    username: STR(0, 128),
    session_policy_id: { ...ID, min: 2, nullable: true },
  },
  'remote-rdp': {
    id: { ...ID, ro: true },
    name: STR(1, 128, { req: true }),
    jumpoint_id: { ...ID, req: true },
    hostname: STR(1, 128, { req: true }),
    jump_group_id: { ...ID, req: true },
    jump_group_type: { t: 'string', enum: ['shared', 'personal'] },
    quality: { t: 'string', enum: ['low', 'performance', 'performance_quality', 'quality', 'best_performance', 'lossless'] },
    console: { t: 'boolean' },
    ignore_untrusted: { t: 'boolean' },
    tag: STR(0, 64),
    comments: STR(0, 1024),
    rdp_username: STR(0, 128),
    domain: STR(0, 64),
    jump_policy_id: { ...ID, nullable: true },
    session_forensics: { t: 'boolean' },
    session_policy_id: { ...ID, min: 2, nullable: true },
    endpoint_id: { ...ID, ro: true, nullable: true },
    secure_app_type: { t: 'string', enum: ['none', 'remote_app', 'remote_desktop_agent', 'remote_desktop_agent_credentials'] },
    remote_app_name: STR(0, 512),
    remote_app_params: STR(0, 8000),
    remote_exe_path: STR(0, 512),
    remote_exe_params: STR(0, 8000),
    target_system: STR(0, 250),
    credential_type: STR(0, 250),
  },
} satisfies Record<string, Record<string, Field>>;

type Kind = keyof typeof PRA_FIELDS;
const PAGING = ['per_page', 'current_page'];
const FILTERS: Record<Kind, string[]> = {
  jumpoint: ['name', 'public_ip', 'private_ip', 'hostname', 'code_name'],
  'jump-group': ['name', 'code_name'],
  'shell-jump': ['name', 'hostname', 'jump_group_id', 'jump_group_type', 'jumpoint_id', 'tag'],
  'remote-rdp': ['name', 'hostname', 'jump_group_id', 'jump_group_type', 'jumpoint_id', 'endpoint_id', 'tag'],
};
/** Fields that must be unique within a type (the spec: "This value must be unique"). */
const UNIQUE: Record<Kind, string[]> = {
  jumpoint: ['name', 'code_name', 'external_jump_item_network_id'],
  'jump-group': ['name', 'code_name'],
  'shell-jump': [],
  'remote-rdp': [],
};

type Obj = Record<string, unknown> & { id: number };
export interface PraNode {
  id: number;
  hostname: string;
  private_ip: string;
  public_ip: string;
  last_connect_timestamp: string;
  last_disconnect_timestamp: null;
}

export class PraDouble extends Double {
  readonly accounts = new Map<string, string>();
  readonly tokens = new Map<string, { token: string; expires: number }[]>();
  readonly store: Record<Kind, Map<number, Obj>> = {
    jumpoint: new Map(),
    'jump-group': new Map(),
    'shell-jump': new Map(),
    'remote-rdp': new Map(),
  };
  readonly nodes = new Map<number, PraNode[]>();
  private readonly seq: Record<Kind, number> = { jumpoint: 0, 'jump-group': 0, 'shell-jump': 0, 'remote-rdp': 0 };
  private readonly hits = new Map<string, number[]>();
  rateLimitPerSecond = 20;
  /**
   * GET /jumpoint/{id}/node: 'list' (a cluster's nodes, as the spec's text says) or 'spec' (one
   * JumpointNode, as its schema says; 404 before a node checked in)
   */
  nodeAnswer: 'list' | 'spec' = 'list';
  /** Renames a field in every object it answers ({code_name: 'codeName'}): an assumption broken, for the doctor's tests */
  renamed: Record<string, string> = {};

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  addApiAccount(clientId: string, secret: string) {
    this.accounts.set(clientId, secret);
  }

  /** A Jumpoint node checking in with its deploy key (what the container does when it starts). */
  checkIn(deployKey: string, node: { hostname: string; private_ip: string }): boolean {
    const j = [...this.store.jumpoint.values()].find((x) => x.docker_deploy_key === deployKey);
    if (!j) return false;
    j.connected = true;
    const list = this.nodes.get(j.id) ?? [];
    list.push({
      id: list.length + 1,
      ...node,
      public_ip: '198.51.100.7',
      last_connect_timestamp: new Date(this.now()).toISOString(),
      last_disconnect_timestamp: null,
    });
    this.nodes.set(j.id, list);
    return true;
  }

  count(): number {
    return Object.values(this.store).reduce((n, m) => n + m.size, 0);
  }

  private token(r: Req): Reply {
    const m = /^Basic (.+)$/.exec(r.headers.authorization ?? '');
    const [id, secret] = m ? Buffer.from(m[1]!, 'base64').toString().split(':') : [];
    if (!id || this.accounts.get(id) !== secret)
      return { status: 401, body: { error: 'invalid_client', message: 'Client authentication failed.' } };
    if (new URLSearchParams(r.raw).get('grant_type') !== 'client_credentials')
      return { status: 400, body: { error: 'unsupported_grant_type', message: 'grant_type must be client_credentials' } };
    const live = (this.tokens.get(id) ?? []).filter((t) => t.expires > this.now());
    if (live.length >= 30) live.shift(); // the oldest is invalidated
    const token = randomBytes(24).toString('hex');
    live.push({ token, expires: this.now() + 3600_000 });
    this.tokens.set(id, live);
    return { status: 200, body: { access_token: token, token_type: 'Bearer', expires_in: 3600 } };
  }

  private account(r: Req): string | null {
    const m = /^Bearer (.+)$/.exec(r.headers.authorization ?? '');
    if (!m) return null;
    for (const [id, list] of this.tokens) if (list.some((t) => t.token === m[1] && t.expires > this.now())) return id;
    return null;
  }

  protected handle(r: Req): Reply {
    if (r.method === 'POST' && r.path === '/oauth2/token') return this.token(r);
    const denied = {
      status: 401,
      body: { error: 'access_denied', message: 'The resource owner or authorization server denied the request.' },
    };
    const acct = this.account(r);
    if (!acct) return denied;
    const recent = (this.hits.get(acct) ?? []).filter((t) => t > this.now() - 1000);
    const limit = {
      'X-RateLimit-Limit': String(this.rateLimitPerSecond),
      'X-RateLimit-Remaining': String(Math.max(0, this.rateLimitPerSecond - recent.length - 1)),
    };
    if (recent.length >= this.rateLimitPerSecond)
      return { status: 429, headers: { ...limit, 'Retry-After': '1' }, body: { message: 'Too Many Requests' } };
    recent.push(this.now());
    this.hits.set(acct, recent);
    const reply = this.route(r, denied);
    return { ...reply, body: this.rename(reply.body), headers: { ...limit, ...reply.headers } };
  }

  private rename(body: unknown): unknown {
    if (Object.keys(this.renamed).length === 0 || body === null || typeof body !== 'object') return body;
    if (Array.isArray(body)) return body.map((b) => this.rename(b));
    return Object.fromEntries(Object.entries(body).map(([k, v]) => [this.renamed[k] ?? k, v]));
  }

  private route(r: Req, denied: Reply): Reply {
    const m = /^\/api\/config\/v1\/(jumpoint|jump-group|jump-item\/shell-jump|jump-item\/remote-rdp)(?:\/(\d+)(\/node)?)?$/.exec(r.path);
    if (!m) return { status: 404, body: { message: 'Not Found' } };
    const kind = m[1]!.replace('jump-item/', '') as Kind;
    const id = m[2] ? Number(m[2]) : null;
    const allowedQuery = id === null && r.method === 'GET' ? [...PAGING, ...FILTERS[kind]] : [];
    if (Object.keys(r.query).some((q) => !allowedQuery.includes(q))) return denied; // unknown query parameter
    const map = this.store[kind];
    if (id === null && r.method === 'GET') return this.list(kind, r);
    if (id === null && r.method === 'POST') return this.create(kind, r, denied);
    const obj = id === null ? undefined : map.get(id);
    if (!obj) return { status: 404, body: { message: 'The specified resource was not found.' } };
    if (m[3] && r.method === 'GET' && kind === 'jumpoint') {
      const nodes = this.nodes.get(obj.id) ?? [];
      if (this.nodeAnswer === 'list') return { status: 200, body: nodes };
      return nodes[0] ? { status: 200, body: nodes[0] } : { status: 404, body: { message: 'Not Found' } };
    }
    if (m[3]) return { status: 404, body: { message: 'Not Found' } };
    if (r.method === 'GET') return { status: 200, body: obj };
    if (r.method === 'DELETE') {
      map.delete(obj.id);
      if (kind === 'jumpoint' || kind === 'jump-group') {
        const ref = kind === 'jumpoint' ? 'jumpoint_id' : 'jump_group_id';
        for (const t of ['shell-jump', 'remote-rdp'] as const)
          for (const [k, it] of this.store[t]) if (it[ref] === obj.id) this.store[t].delete(k);
        if (kind === 'jumpoint') this.nodes.delete(obj.id);
      }
      return { status: 204 };
    }
    return { status: 405, body: { message: 'Method Not Allowed' } };
  }

  private list(kind: Kind, r: Req): Reply {
    const per = r.query.per_page === undefined ? 100 : Number(r.query.per_page);
    const page = r.query.current_page === undefined ? 1 : Number(r.query.current_page);
    const errors: Record<string, string[]> = {};
    if (!Number.isInteger(per) || per < 5 || per > 100) errors.per_page = ['The per page must be between 5 and 100.'];
    if (!Number.isInteger(page) || page < 1) errors.current_page = ['The current page must be at least 1.'];
    if (Object.keys(errors).length) return { status: 422, body: { message: 'The given data was invalid.', errors } };
    // Filters match exactly and case-insensitively; a Jumpoint's ip/hostname filters search its nodes.
    const onNodes = kind === 'jumpoint' ? ['public_ip', 'private_ip', 'hostname'] : [];
    const all = [...this.store[kind].values()].filter((o) =>
      FILTERS[kind].every((f) => {
        const q = r.query[f]?.toLowerCase();
        if (q === undefined) return true;
        if (onNodes.includes(f)) return (this.nodes.get(o.id) ?? []).some((n) => String(n[f as keyof PraNode]).toLowerCase() === q);
        return String(o[f] ?? '').toLowerCase() === q;
      }),
    );
    const last = Math.max(1, Math.ceil(all.length / per));
    const base = `${this.url}${r.path}`;
    const link = (p: number, rel: string) => `<${base}?per_page=${per}&current_page=${p}>; rel="${rel}"`;
    return {
      status: 200,
      headers: {
        'X-BT-Pagination-Current-Page': String(page),
        'X-BT-Pagination-Last-Page': String(last),
        'X-BT-Pagination-Per-Page': String(per),
        'X-BT-Pagination-Total': String(all.length),
        Link: [
          link(1, 'first'),
          ...(page > 1 ? [link(page - 1, 'previous')] : []),
          ...(page < last ? [link(page + 1, 'next')] : []),
          link(last, 'last'),
        ].join(', '),
      },
      body: all.slice((page - 1) * per, page * per),
    };
  }

  private create(kind: Kind, r: Req, denied: Reply): Reply {
    if (typeof r.json !== 'object' || r.json === null || Array.isArray(r.json))
      return { status: 422, body: { message: 'The request body must be a JSON object.', errors: {} } };
    const body = r.json as Record<string, unknown>;
    const { unknown, errors } = checkFields(body, PRA_FIELDS[kind]);
    if (unknown.length) return denied; // an unknown body field answers 401, as the spec warns
    const map = this.store[kind];
    for (const u of UNIQUE[kind]) {
      const v = body[u];
      if (typeof v === 'string' && v !== '' && [...map.values()].some((o) => String(o[u] ?? '').toLowerCase() === v.toLowerCase()))
        (errors[u] ??= []).push(`The ${u} has already been taken.`);
    }
    if (kind === 'shell-jump' || kind === 'remote-rdp') {
      if (typeof body.jumpoint_id === 'number' && !this.store.jumpoint.has(body.jumpoint_id))
        (errors.jumpoint_id ??= []).push('The selected jumpoint id is invalid.');
      if (typeof body.jump_group_id === 'number' && !this.store['jump-group'].has(body.jump_group_id))
        (errors.jump_group_id ??= []).push('The selected jump group id is invalid.');
    }
    if (Object.keys(errors).length) return { status: 422, body: { message: 'The given data was invalid.', errors } };
    const id = ++this.seq[kind];
    const obj: Obj = { ...body, id };
    if (kind === 'jumpoint') {
      Object.assign(obj, {
        enabled: body.enabled ?? true,
        clustered: body.clustered ?? false,
        shell_jump_enabled: body.shell_jump_enabled ?? false,
        protocol_tunnel_enabled: body.protocol_tunnel_enabled ?? true,
        connected: false,
        code_name: body.code_name ?? '',
      });
      if (obj.platform === 'linux-x86' && obj.clustered) obj.docker_deploy_key = `dk_${randomBytes(20).toString('hex')}`;
    }
    if (kind === 'shell-jump')
      Object.assign(obj, {
        port: body.port ?? (body.protocol === 'ssh' ? 22 : 23),
        jump_group_type: body.jump_group_type ?? 'shared',
        terminal: body.terminal ?? 'xterm',
        tag: body.tag ?? '',
      });
    if (kind === 'remote-rdp')
      Object.assign(obj, {
        jump_group_type: body.jump_group_type ?? 'shared',
        quality: body.quality ?? 'best_performance',
        tag: body.tag ?? '',
      });
    map.set(id, obj);
    return { status: 201, headers: { Location: `${this.url}${r.path}/${id}` }, body: obj };
  }
}
