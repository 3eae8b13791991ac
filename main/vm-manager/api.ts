/**
 * The REST API: giantswarm/vm-manager's /api/v1 (api/openapi.yaml @ dc39fe35; the schemas are in
 * main/vm-api/schemas.ts): snake_case request bodies with unknown fields refused, camelCase records
 * (views.ts), errors as {"error":{"code","message"}} with the document's codes, a bearer token on
 * every request. Beyond the document, this daemon keeps its image store routes (import, delete,
 * golden values) and a `povdesk` object on records for what only it knows.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { listZodIssues } from '../../shared/contract/errors';
import { localCreateVmRequestSchema, setInternetSchema, setUserDataSchema } from '../vm-api/povdesk';
import {
  CONSOLE_LINES,
  CREATE_VM_DEFAULTS,
  createNetworkRequestSchema,
  ERROR_STATUS,
  execRequestSchema,
  forwardRequestSchema,
  type ApiErrorCode,
} from '../vm-api/schemas';
import { STATUS, VmmError, type VmmCode } from './errors';
import { execInGuest } from './exec';
import {
  deleteImage,
  DISK_STAGE_PCRS,
  getImage,
  imagesDir,
  importImage,
  insideDir,
  listImages,
  remakeReferences,
  TEST_IMAGE,
} from './images';
import { GUEST_QUOTE_SCRIPT, goldenForSize } from './attest/index';
import { learnWith, saveGolden } from './golden';
import { GOLDEN_VM_SIZE } from '../../shared/golden-size';
import type { HostReport } from './host';
import type { Networks } from './networks';
import { openApiDocument } from './openapi';
import { attestationDoc, hostView, imageByRef, imageView, localImageView, metricsView, networkView, vmView } from './views';
import type { VmRecord, VmService } from './vms';

const MAX_BODY = 8 * 1024 * 1024;
export { DNS_LABEL } from '../vm-api/schemas';

/** Limits of this host on top of the document's (a bad value is an invalid spec: 400). */
const LIMITS = { cpus: 64, memory_mib: 262144, disk_gib: 4096 } as const;

/** The create body as this daemon takes it: the document's, plus `network: "restricted"` as the old name of `default` and the `povdesk` extras. */
export const createVmSchema = localCreateVmRequestSchema;
export type CreateVmBody = z.input<typeof localCreateVmRequestSchema>;

const hex64 = lazySchema(() => z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 value: 64 lower-case hex characters'));
// The size golden values are learned at / saved for (shared/golden-size.ts); the create's limits.
const goldenSizeFields = () => ({
  cpus: z.number().int().min(1).max(LIMITS.cpus).optional(),
  memory_mib: z.number().int().min(256).max(LIMITS.memory_mib).optional(),
});
const learnGoldenSchema = lazySchema(() => z.strictObject(goldenSizeFields()));
const saveGoldenSchema = lazySchema(() =>
  z.strictObject({
    golden: z.record(z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23'), hex64),
    firmware: z
      .strictObject({ path: z.string().min(1).max(4096), sha256: hex64 })
      .nullable()
      .optional(),
    ...goldenSizeFields(),
  }),
);
const goldenSize = (b: { cpus?: number; memory_mib?: number }) => ({
  cpus: b.cpus ?? GOLDEN_VM_SIZE.cpus,
  memoryMiB: b.memory_mib ?? GOLDEN_VM_SIZE.memoryMiB,
});
const noFields = lazySchema(() => z.strictObject({}));
const importSchema = lazySchema(() =>
  z.strictObject({
    path: z.string().min(1).max(4096),
    name: z
      .string()
      .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'name must be a DNS label')
      .optional(),
  }),
);

/** One route: method, path under /api/v1 with `{param}` segments, operationId, handler. */
type Route = [method: string, path: string, operationId: string, handle: (a: RouteArgs) => unknown];
interface RouteArgs {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
}

/** The path's parameters when its segments match the template's, else null. */
function matchPath(template: string, seg: string[]): Record<string, string> | null {
  const t = template.split('/').filter(Boolean);
  if (t.length !== seg.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < t.length; i++) {
    const name = /^\{(\w+)\}$/.exec(t[i]!)?.[1];
    if (name) params[name] = seg[i]!;
    else if (t[i] !== seg[i]) return null;
  }
  return params;
}

/** Parses a body; an unknown field is named together with the fields the route takes. */
function parseBody<S extends z.ZodObject>(schema: S, body: unknown): z.output<S> {
  const fields = Object.keys(schema.shape).join(', ');
  const r = schema.safeParse(body, {
    error: (i) =>
      i.code === 'unrecognized_keys'
        ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}: the fields are ${fields}`
        : undefined,
  });
  if (!r.success) throw new VmmError('invalid_request', listZodIssues(r.error, 'body'));
  return r.data;
}

export interface ApiContext {
  stateDir: string;
  token: string;
  vms: VmService;
  networks: Networks;
  host: () => Promise<HostReport>;
  /** the one Host header accepted (address:port we listen on); null: no check (unix socket) */
  allowedHost?: () => string | null;
}

export function tokenOk(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readJson(req: IncomingMessage, required: boolean): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const d of req) {
    size += (d as Buffer).length;
    if (size > MAX_BODY) throw new VmmError('invalid_request', `the body is over ${MAX_BODY} bytes`);
    parts.push(d as Buffer);
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (!text.trim()) {
    if (required) throw new VmmError('invalid_request', 'the body is empty: this route takes a JSON object');
    return {};
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new VmmError('invalid_request', `the body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Resolves the create body's image: a name in the store (or "<id>_<version>"), or a path that must lie in the store. */
export function resolveImageRef(stateDir: string, ref: string): string {
  if (!ref.includes('/')) return imageByRef(stateDir, ref).name;
  const abs = resolve(stateDir, ref);
  if (!insideDir(stateDir, abs))
    throw new VmmError(
      'invalid_request',
      `image path ${abs} is outside the state dir ${resolve(stateDir)}; import it first with \`povdesk vm-manager image import <file>\``,
    );
  const rel = relative(imagesDir(stateDir), abs);
  const name = rel.split(sep)[0] ?? '';
  if (rel.startsWith('..') || !name || !existsSync(abs))
    throw new VmmError('invalid_request', `${abs} is not an image in the store (${imagesDir(stateDir)}/<name>)`);
  const known = listImages(stateDir).find((i) => i.name === name);
  if (!known) throw new VmmError('invalid_request', `${abs} is not an image: no image.json in ${dirname(abs)}`);
  if (statSync(abs).isFile() && ![known.kernel, known.initrd, known.disk, 'image.json', 'policy.json'].includes(basename(abs))) {
    throw new VmmError('invalid_request', `${abs} is not an image file of "${name}"`);
  }
  return name;
}

/** The attestation with this daemon's PCR table (golden values compared) under `povdesk`. */
export function attestationView(stateDir: string, r: VmRecord) {
  let golden: Record<string, string> = {};
  let compared: number[] = [];
  let recordOnly: number[] = [];
  let references = false;
  try {
    const p = getImage(stateDir, r.image).policy;
    if (p) {
      references = !!p.references;
      golden = references ? {} : goldenForSize(p, { cpus: r.cpus, memoryMiB: r.memoryMiB }).sha256;
      recordOnly = references ? [] : (p.record_only ?? []);
      compared = [...new Set([...p.pcrs.initrd, ...p.pcrs.ready])].filter((n) => n !== 11 && n !== 13 && !recordOnly.includes(n));
    }
  } catch {
    // image gone: no golden values to show
  }
  const latest = r.attestation.ready ?? r.attestation.initrd;
  const pcrs = latest?.pcrs ?? {};
  // With references a PCR is compared with the replay of the event log (a mismatch holds the replayed value).
  const replayed = (pcr: string) =>
    latest?.mismatches.find((m) => m.pcr === pcr)?.expected ?? (latest?.events ? (pcrs[pcr] ?? null) : null);
  const table = Object.keys(pcrs)
    .sort((a, b) => Number(a) - Number(b))
    .map((pcr) => {
      const expected = references ? (compared.includes(Number(pcr)) ? replayed(pcr) : null) : (golden[pcr] ?? null);
      return {
        pcr,
        value: pcrs[pcr] ?? '',
        golden: references ? null : expected,
        ...(references ? { replayed: expected } : {}),
        compared: compared.includes(Number(pcr)),
        match: expected === null ? null : expected === pcrs[pcr],
      };
    });
  return {
    id: r.id,
    image: r.image,
    cpus: r.cpus,
    memoryMiB: r.memoryMiB,
    state: r.state,
    stage: r.attestation.ready ? 'ready' : r.attestation.initrd ? 'initrd' : null,
    references,
    ...r.attestation,
    table,
  };
}

/**
 * DNS rebinding: over TCP only the exact address:port the manager listens on is a valid Host (a unix
 * socket has none to check, so `allowed` is null there). The refusal's message, or null when allowed.
 */
export function hostRefusal(req: IncomingMessage, allowed: string | null): string | null {
  if (allowed === null || req.headers.host === allowed) return null;
  return `Host "${req.headers.host ?? ''}" is not this vm-manager (${allowed}); call it by that address (a page on another name is refused: DNS rebinding)`;
}

/** The document's code for an error of this daemon (401/403 come from the guard, outside the document). */
function wireCode(code: VmmCode): { code: string; status: number } {
  if (code === 'unauthorized' || code === 'forbidden') return { code, status: STATUS[code] };
  const doc: ApiErrorCode = code === 'internal' || code === 'unavailable' ? 'internal_error' : code;
  return { code: doc, status: ERROR_STATUS[doc] };
}

export function createApiHandler(ctx: ApiContext) {
  const send = (res: ServerResponse, status: number, body?: unknown, type = 'application/json') => {
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(text)) }).end(text);
  };
  const fail = (res: ServerResponse, code: VmmCode, message: string) => {
    const w = wireCode(code);
    if (code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="vm-manager"');
    send(res, w.status, { error: { code: w.code, message } });
  };
  const vms = () => ctx.vms.list();

  const createVm = async (body: unknown) => {
    const raw =
      body && typeof body === 'object' && (body as { network?: unknown }).network === 'restricted' ? { ...body, network: 'default' } : body;
    const b = parseBody(localCreateVmRequestSchema, raw);
    for (const k of ['cpus', 'memory_mib', 'disk_gib'] as const) {
      if ((b[k] ?? 0) > LIMITS[k]) throw new VmmError('invalid_request', `${k}: at most ${LIMITS[k]} here, got ${b[k]}`);
    }
    const network = b.network ?? CREATE_VM_DEFAULTS.network;
    if (!ctx.networks.has(network))
      throw new VmmError('invalid_request', `network "${network}" does not exist: create it with POST /api/v1/networks or use "default"`);
    if (b.kubernetes_version !== undefined)
      throw new VmmError(
        'invalid_request',
        `kubernetes_version "${b.kubernetes_version}": images here offer no Kubernetes versions (no Kubernetes sysexts on a laptop)`,
      );
    let image: string;
    try {
      image = resolveImageRef(ctx.stateDir, b.image ?? TEST_IMAGE);
    } catch (e) {
      // The document: an image that does not exist is an invalid spec (400), not a missing route.
      throw e instanceof VmmError && e.code === 'not_found' ? new VmmError('invalid_request', e.message) : e;
    }
    const waitFor = b.wait_for ?? CREATE_VM_DEFAULTS.wait_for;
    const rec = await ctx.vms.create({
      name: b.name,
      image,
      cpus: b.cpus ?? CREATE_VM_DEFAULTS.cpus,
      memoryMiB: b.memory_mib ?? CREATE_VM_DEFAULTS.memory_mib,
      diskGiB: b.disk_gib ?? CREATE_VM_DEFAULTS.disk_gib,
      userData: b.user_data ?? null,
      requireAttestation: b.require_attestation ?? CREATE_VM_DEFAULTS.require_attestation,
      waitFor,
      network,
      hostname: b.hostname ?? null,
      metadata: b.metadata ?? {},
      sshAuthorizedKeys: b.ssh_authorized_keys ?? [],
      hostForwards: (b.povdesk?.host_forwards ?? []).map((f) => ({ guestPort: f.guest_port, hostPort: f.host_port })),
    });
    if (waitFor === 'none') return rec;
    return ctx.vms.waitFor(rec.id, waitFor, ctx.vms.timeouts.bootMs + ctx.vms.timeouts.startMs);
  };

  /** Resolves an image reference given in the path to the image's name. */
  const imageName = (ref: string) => imageByRef(ctx.stateDir, ref).name;

  /**
   * The routes under /api/v1, in the document's order: giantswarm's by their operationId, then
   * this daemon's own (no operationId in the document; named here in the same style). A path's
   * `{x}` matches one segment, decoded; `{id}` must look like a VM id.
   */
  const routes: Route[] = [
    ['GET', '/host', 'getHost', async (a) => send(a.res, 200, hostView(await ctx.host()))],
    ['GET', '/images', 'listImages', (a) => send(a.res, 200, listImages(ctx.stateDir).map(imageView))],
    ['GET', '/images/{ref}', 'getImage', (a) => send(a.res, 200, imageView(imageByRef(ctx.stateDir, a.params.ref!)))],
    [
      'GET',
      '/networks',
      'listNetworks',
      (a) =>
        send(
          a.res,
          200,
          ctx.networks.list().map((n) => networkView(n, vms())),
        ),
    ],
    [
      'POST',
      '/networks',
      'createNetwork',
      async (a) => {
        const b = parseBody(createNetworkRequestSchema, await readJson(a.req, true));
        return send(
          a.res,
          201,
          networkView(ctx.networks.create({ name: b.name, cidr: b.cidr, dnsSearchDomain: b.dns_search_domain }), vms()),
        );
      },
    ],
    ['GET', '/networks/{name}', 'getNetwork', (a) => send(a.res, 200, networkView(ctx.networks.get(a.params.name!), vms()))],
    [
      'DELETE',
      '/networks/{name}',
      'deleteNetwork',
      (a) => {
        const name = a.params.name!;
        ctx.networks.get(name);
        ctx.networks.delete(
          name,
          vms()
            .filter((v) => v.network === name)
            .map((v) => v.id),
        );
        return send(a.res, 204);
      },
    ],
    ['GET', '/vms', 'listVMs', (a) => send(a.res, 200, vms().map(vmView))],
    ['POST', '/vms', 'createVM', async (a) => send(a.res, 201, vmView(await createVm(await readJson(a.req, true))))],
    ['GET', '/vms/{id}', 'getVM', (a) => send(a.res, 200, vmView(ctx.vms.get(a.params.id!)))],
    [
      'DELETE',
      '/vms/{id}',
      'deleteVM',
      async (a) => {
        await ctx.vms.delete(a.params.id!);
        return send(a.res, 204);
      },
    ],
    ['POST', '/vms/{id}/start', 'startVM', async (a) => send(a.res, 200, vmView(await ctx.vms.start(a.params.id!)))],
    ['POST', '/vms/{id}/stop', 'stopVM', async (a) => send(a.res, 200, vmView(await ctx.vms.stop(a.params.id!)))],
    ['POST', '/vms/{id}/reboot', 'rebootVM', async (a) => send(a.res, 200, vmView(await ctx.vms.reboot(a.params.id!)))],
    [
      'POST',
      '/vms/{id}/exec',
      'execVM',
      async (a) => {
        const b = parseBody(execRequestSchema, await readJson(a.req, true));
        return send(a.res, 200, await execInGuest(ctx.vms.get(a.params.id!), b.command));
      },
    ],
    [
      'POST',
      '/vms/{id}/forward',
      'forwardPort',
      async (a) => {
        const id = a.params.id!;
        const b = parseBody(forwardRequestSchema, await readJson(a.req, true));
        ctx.vms.get(id);
        const f = await ctx.vms.forward(id, b.port);
        return send(a.res, 200, { id, port: f.port, address: `127.0.0.1:${f.hostPort}` });
      },
    ],
    [
      'GET',
      '/vms/{id}/console',
      'getVMConsole',
      (a) => {
        const raw = a.url.searchParams.get('lines') ?? String(CONSOLE_LINES.default);
        const n = Number(raw);
        if (!/^\d+$/.test(raw) || n < 1 || n > CONSOLE_LINES.max)
          return fail(a.res, 'invalid_request', `lines must be a whole number from 1 to ${CONSOLE_LINES.max}, got "${raw}"`);
        const lines = ctx.vms.consoleTail(a.params.id!, n);
        return send(a.res, 200, { id: a.params.id, lines: lines.length, console: lines.join('\n') });
      },
    ],
    [
      'GET',
      '/vms/{id}/attestation',
      'getVMAttestation',
      (a) => {
        const r = ctx.vms.get(a.params.id!);
        return send(a.res, 200, { ...attestationDoc(r), povdesk: attestationView(ctx.stateDir, r) });
      },
    ],
    ['GET', '/vms/{id}/metrics', 'getVMMetrics', (a) => send(a.res, 200, metricsView(ctx.vms.get(a.params.id!), vms()))],
    [
      'GET',
      '/vms/{id}/report',
      'getVMReport',
      (a) => {
        ctx.vms.get(a.params.id!);
        return fail(
          a.res,
          'not_found',
          `VM ${a.params.id} has no systemd-report upload: the guest here reports READY to the metadata service, not a systemd-report`,
        );
      },
    ],
    ['GET', '/openapi.yaml', 'getOpenAPI', (a) => send(a.res, 200, openApiDocument(), 'application/yaml')],

    // Beyond the document: the guest half of attestation, for an image builder (bake.start) to
    // put in a disk image, with the PCRs a disk image's quotes must cover.
    [
      'GET',
      '/povdesk/attest-agent',
      'povdeskAttestAgent',
      (a) => {
        const script = readFileSync(GUEST_QUOTE_SCRIPT, 'utf8');
        return send(a.res, 200, { script, sha256: createHash('sha256').update(script).digest('hex'), pcrs: DISK_STAGE_PCRS });
      },
    ],
    // Beyond the document: the local image store.
    [
      'POST',
      '/images',
      'povdeskImportImage',
      async (a) => {
        const b = parseBody(importSchema, await readJson(a.req, true));
        const abs = resolve(ctx.stateDir, b.path);
        if (!insideDir(ctx.stateDir, abs))
          return fail(
            a.res,
            'invalid_request',
            `${abs} is outside the state dir ${resolve(ctx.stateDir)}: copy the file under it first (the API imports only from there)`,
          );
        return send(a.res, 201, await importImage(ctx.stateDir, abs, { name: b.name }));
      },
    ],
    [
      'DELETE',
      '/images/{ref}',
      'povdeskDeleteImage',
      (a) => {
        const name = imageName(a.params.ref!);
        const users = vms()
          .filter((v) => v.image === name)
          .map((v) => v.id);
        if (users.length)
          return fail(
            a.res,
            'conflict',
            `image "${name}" is used by VM ${users.join(', ')}: delete the VM${users.length > 1 ? 's' : ''} first`,
          );
        deleteImage(ctx.stateDir, name);
        return send(a.res, 204);
      },
    ],
    [
      'POST',
      '/images/{ref}/learn-golden',
      'povdeskLearnGolden',
      async (a) => {
        const b = parseBody(learnGoldenSchema, await readJson(a.req, false));
        return send(a.res, 200, await learnWith(ctx.vms, ctx.stateDir, imageName(a.params.ref!), goldenSize(b)));
      },
    ],
    // The reference measurements made again from the image's files (no boot), e.g. after a firmware update.
    [
      'POST',
      '/images/{ref}/references',
      'povdeskRemakeReferences',
      async (a) => {
        parseBody(noFields, await readJson(a.req, false));
        const name = imageName(a.params.ref!);
        const saved = remakeReferences(ctx.stateDir, name);
        return send(a.res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
      },
    ],
    [
      'PUT',
      '/images/{ref}/golden',
      'povdeskSaveGolden',
      async (a) => {
        const b = parseBody(saveGoldenSchema, await readJson(a.req, true));
        const name = imageName(a.params.ref!);
        const saved = saveGolden(ctx.stateDir, name, b.golden, b.firmware ?? null, goldenSize(b));
        return send(a.res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
      },
    ],
    // The POV's "Internet access"; each VM follows it at its next start.
    [
      'PUT',
      '/networks/{name}/povdesk/internet',
      'povdeskSetInternet',
      async (a) => {
        const b = parseBody(setInternetSchema, await readJson(a.req, true));
        return send(a.res, 200, networkView(ctx.networks.setInternet(a.params.name!, b.internet), vms()));
      },
    ],
    [
      'POST',
      '/vms/{id}/povdesk/save-clean',
      'povdeskSaveClean',
      async (a) => send(a.res, 200, vmView(await ctx.vms.saveClean(a.params.id!))),
    ],
    [
      'POST',
      '/vms/{id}/povdesk/reset-clean',
      'povdeskResetClean',
      async (a) => send(a.res, 200, vmView(await ctx.vms.resetClean(a.params.id!))),
    ],
    // The user-data the metadata service serves from now on (Skytap's PUT of user_data).
    [
      'PUT',
      '/vms/{id}/povdesk/user-data',
      'povdeskSetUserData',
      async (a) => {
        const id = a.params.id!;
        ctx.vms.get(id);
        const b = parseBody(setUserDataSchema, await readJson(a.req, true));
        ctx.vms.setUserData(id, b.user_data);
        return send(a.res, 204);
      },
    ],
  ];

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    const path = url.pathname;
    const m = req.method ?? 'GET';
    const wrongHost = hostRefusal(req, ctx.allowedHost?.() ?? null);
    if (wrongHost) return fail(res, 'forbidden', wrongHost);
    if (path === '/healthz') return send(res, 200, { ok: true });
    if (!path.startsWith('/api/v1/') && path !== '/api/v1')
      return fail(res, 'not_found', `no route ${m} ${path}; the API lives under /api/v1`);
    if (!tokenOk(req.headers.authorization, ctx.token))
      return fail(
        res,
        'unauthorized',
        'missing or wrong bearer token: send "Authorization: Bearer <token>" (printed by `povdesk vm-manager serve`)',
      );
    const seg = path
      .slice('/api/v1'.length)
      .split('/')
      .filter(Boolean)
      .map((x) => decodeURIComponent(x));
    for (const [method, template, , handle] of routes) {
      if (method !== m) continue;
      const params = matchPath(template, seg);
      if (!params) continue;
      if (params.id !== undefined && !/^[0-9a-f]{8}$/.test(params.id))
        return fail(res, 'not_found', `no VM with id "${params.id}" (ids are 8 hex characters)`);
      return handle({ req, res, url, params });
    }
    return fail(res, 'not_found', `no route ${m} ${path}`);
  };

  return (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((e: unknown) => {
      const code = (e as { code?: string }).code;
      const known = typeof code === 'string' && code in STATUS;
      if (!res.headersSent) fail(res, known ? (code as VmmCode) : 'internal', e instanceof Error ? e.message : String(e));
      else res.end();
    });
  };
}
