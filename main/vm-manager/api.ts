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
import { CONSOLE_LINES, CREATE_VM_DEFAULTS, createNetworkRequestSchema, ERROR_STATUS, execRequestSchema, forwardRequestSchema, type ApiErrorCode } from '../vm-api/schemas';
import { STATUS, VmmError, type VmmCode } from './errors';
import { execInGuest } from './exec';
import { deleteImage, DISK_STAGE_PCRS, getImage, imagesDir, importImage, insideDir, listImages, remakeReferences, TEST_IMAGE } from './images';
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
const saveGoldenSchema = lazySchema(() => z.strictObject({
  golden: z.record(z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23'), hex64),
  firmware: z.strictObject({ path: z.string().min(1).max(4096), sha256: hex64 }).nullable().optional(),
  ...goldenSizeFields(),
}));
const goldenSize = (b: { cpus?: number; memory_mib?: number }) => ({ cpus: b.cpus ?? GOLDEN_VM_SIZE.cpus, memoryMiB: b.memory_mib ?? GOLDEN_VM_SIZE.memoryMiB });
const noFields = lazySchema(() => z.strictObject({}));
const importSchema = lazySchema(() => z.strictObject({ path: z.string().min(1).max(4096), name: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'name must be a DNS label').optional() }));

/** Parses a body; an unknown field is named together with the fields the route takes. */
function parseBody<S extends z.ZodObject>(schema: S, body: unknown): z.output<S> {
  const fields = Object.keys(schema.shape).join(', ');
  const r = schema.safeParse(body, {
    error: (i) => (i.code === 'unrecognized_keys' ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}: the fields are ${fields}` : undefined),
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
  if (!insideDir(stateDir, abs)) throw new VmmError('invalid_request', `image path ${abs} is outside the state dir ${resolve(stateDir)}; import it first with \`povdesk vm-manager image import <file>\``);
  const rel = relative(imagesDir(stateDir), abs);
  const name = rel.split(sep)[0] ?? '';
  if (rel.startsWith('..') || !name || !existsSync(abs)) throw new VmmError('invalid_request', `${abs} is not an image in the store (${imagesDir(stateDir)}/<name>)`);
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
  const replayed = (pcr: string) => latest?.mismatches.find((m) => m.pcr === pcr)?.expected ?? (latest?.events ? pcrs[pcr] ?? null : null);
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
  return { id: r.id, image: r.image, cpus: r.cpus, memoryMiB: r.memoryMiB, state: r.state, stage: r.attestation.ready ? 'ready' : r.attestation.initrd ? 'initrd' : null, references, ...r.attestation, table };
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
    const raw = body && typeof body === 'object' && (body as { network?: unknown }).network === 'restricted' ? { ...body, network: 'default' } : body;
    const b = parseBody(localCreateVmRequestSchema, raw);
    for (const k of ['cpus', 'memory_mib', 'disk_gib'] as const) {
      if ((b[k] ?? 0) > LIMITS[k]) throw new VmmError('invalid_request', `${k}: at most ${LIMITS[k]} here, got ${b[k]}`);
    }
    const network = b.network ?? CREATE_VM_DEFAULTS.network;
    if (!ctx.networks.has(network)) throw new VmmError('invalid_request', `network "${network}" does not exist: create it with POST /api/v1/networks or use "default"`);
    if (b.kubernetes_version !== undefined) throw new VmmError('invalid_request', `kubernetes_version "${b.kubernetes_version}": images here offer no Kubernetes versions (no Kubernetes sysexts on a laptop)`);
    let image: string;
    try {
      image = resolveImageRef(ctx.stateDir, b.image ?? TEST_IMAGE);
    } catch (e) {
      // The document: an image that does not exist is an invalid spec (400), not a missing route.
      throw e instanceof VmmError && e.code === 'not_found' ? new VmmError('invalid_request', e.message) : e;
    }
    const waitFor = b.wait_for ?? CREATE_VM_DEFAULTS.wait_for;
    const rec = await ctx.vms.create({
      name: b.name, image, cpus: b.cpus ?? CREATE_VM_DEFAULTS.cpus, memoryMiB: b.memory_mib ?? CREATE_VM_DEFAULTS.memory_mib, diskGiB: b.disk_gib ?? CREATE_VM_DEFAULTS.disk_gib,
      userData: b.user_data ?? null, requireAttestation: b.require_attestation ?? CREATE_VM_DEFAULTS.require_attestation, waitFor, network,
      hostname: b.hostname ?? null, metadata: b.metadata ?? {}, sshAuthorizedKeys: b.ssh_authorized_keys ?? [],
      hostForwards: (b.povdesk?.host_forwards ?? []).map((f) => ({ guestPort: f.guest_port, hostPort: f.host_port })),
    });
    if (waitFor === 'none') return rec;
    return ctx.vms.waitFor(rec.id, waitFor, ctx.vms.timeouts.bootMs + ctx.vms.timeouts.startMs);
  };

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    const path = url.pathname;
    const m = req.method ?? 'GET';
    const wrongHost = hostRefusal(req, ctx.allowedHost?.() ?? null);
    if (wrongHost) return fail(res, 'forbidden', wrongHost);
    if (path === '/healthz') return send(res, 200, { ok: true });
    if (!path.startsWith('/api/v1/') && path !== '/api/v1') return fail(res, 'not_found', `no route ${m} ${path}; the API lives under /api/v1`);
    if (!tokenOk(req.headers.authorization, ctx.token)) return fail(res, 'unauthorized', 'missing or wrong bearer token: send "Authorization: Bearer <token>" (printed by `povdesk vm-manager serve`)');
    const p = path.slice('/api/v1'.length).replace(/\/+$/, '') || '/';
    const seg = p.split('/').filter(Boolean).map((s) => decodeURIComponent(s));

    if (m === 'GET' && p === '/openapi.yaml') return send(res, 200, openApiDocument(), 'application/yaml');
    if (m === 'GET' && p === '/povdesk/attest-agent') {
      // Beyond the document: the guest half of attestation, for an image builder (templates.bake)
      // to put in a disk image, with the PCRs a disk image's quotes must cover.
      const script = readFileSync(GUEST_QUOTE_SCRIPT, 'utf8');
      return send(res, 200, { script, sha256: createHash('sha256').update(script).digest('hex'), pcrs: DISK_STAGE_PCRS });
    }
    if (m === 'GET' && p === '/host') return send(res, 200, hostView(await ctx.host()));
    if (seg[0] === 'images') {
      if (m === 'GET' && seg.length === 1) return send(res, 200, listImages(ctx.stateDir).map(imageView));
      if (m === 'GET' && seg.length === 2) return send(res, 200, imageView(imageByRef(ctx.stateDir, seg[1] ?? '')));
      // Beyond the document: the local image store.
      if (m === 'DELETE' && seg.length === 2) {
        const name = imageByRef(ctx.stateDir, seg[1] ?? '').name;
        const users = vms().filter((v) => v.image === name).map((v) => v.id);
        if (users.length) return fail(res, 'conflict', `image "${name}" is used by VM ${users.join(', ')}: delete the VM${users.length > 1 ? 's' : ''} first`);
        deleteImage(ctx.stateDir, name);
        return send(res, 204);
      }
      if (m === 'POST' && seg.length === 1) {
        const b = parseBody(importSchema, await readJson(req, true));
        const abs = resolve(ctx.stateDir, b.path);
        if (!insideDir(ctx.stateDir, abs)) return fail(res, 'invalid_request', `${abs} is outside the state dir ${resolve(ctx.stateDir)}: copy the file under it first (the API imports only from there)`);
        return send(res, 201, await importImage(ctx.stateDir, abs, { name: b.name }));
      }
      if (m === 'POST' && seg.length === 3 && seg[2] === 'learn-golden') {
        const b = parseBody(learnGoldenSchema, await readJson(req, false));
        return send(res, 200, await learnWith(ctx.vms, ctx.stateDir, imageByRef(ctx.stateDir, seg[1] ?? '').name, goldenSize(b)));
      }
      if (m === 'POST' && seg.length === 3 && seg[2] === 'references') {
        // The reference measurements made again from the image's files (no boot), e.g. after a firmware update.
        parseBody(noFields, await readJson(req, false));
        const name = imageByRef(ctx.stateDir, seg[1] ?? '').name;
        const saved = remakeReferences(ctx.stateDir, name);
        return send(res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
      }
      if (m === 'PUT' && seg.length === 3 && seg[2] === 'golden') {
        const b = parseBody(saveGoldenSchema, await readJson(req, true));
        const name = imageByRef(ctx.stateDir, seg[1] ?? '').name;
        const saved = saveGolden(ctx.stateDir, name, b.golden, b.firmware ?? null, goldenSize(b));
        return send(res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
      }
    }
    if (seg[0] === 'networks') {
      if (m === 'GET' && seg.length === 1) return send(res, 200, ctx.networks.list().map((n) => networkView(n, vms())));
      if (m === 'POST' && seg.length === 1) {
        const b = parseBody(createNetworkRequestSchema, await readJson(req, true));
        return send(res, 201, networkView(ctx.networks.create({ name: b.name, cidr: b.cidr, dnsSearchDomain: b.dns_search_domain }), vms()));
      }
      if (m === 'GET' && seg.length === 2) return send(res, 200, networkView(ctx.networks.get(seg[1] ?? ''), vms()));
      if (m === 'PUT' && seg.length === 4 && seg[2] === 'povdesk' && seg[3] === 'internet') {
        // Beyond the document: the POV's "Internet access"; each VM follows it at its next start.
        const b = parseBody(setInternetSchema, await readJson(req, true));
        return send(res, 200, networkView(ctx.networks.setInternet(seg[1] ?? '', b.internet), vms()));
      }
      if (m === 'DELETE' && seg.length === 2) {
        const name = seg[1] ?? '';
        ctx.networks.get(name);
        ctx.networks.delete(name, vms().filter((v) => v.network === name).map((v) => v.id));
        return send(res, 204);
      }
    }
    if (m === 'GET' && p === '/vms') return send(res, 200, vms().map(vmView));
    if (m === 'POST' && p === '/vms') return send(res, 201, vmView(await createVm(await readJson(req, true))));
    if (seg[0] === 'vms' && seg[1]) {
      const id = seg[1];
      const op = seg[2];
      if (!/^[0-9a-f]{8}$/.test(id)) return fail(res, 'not_found', `no VM with id "${id}" (ids are 8 hex characters)`);
      if (seg.length === 2 && m === 'GET') return send(res, 200, vmView(ctx.vms.get(id)));
      if (seg.length === 2 && m === 'DELETE') {
        await ctx.vms.delete(id);
        return send(res, 204);
      }
      if (seg.length === 3 && m === 'POST' && op === 'start') return send(res, 200, vmView(await ctx.vms.start(id)));
      if (seg.length === 3 && m === 'POST' && op === 'stop') return send(res, 200, vmView(await ctx.vms.stop(id)));
      if (seg.length === 3 && m === 'POST' && op === 'reboot') return send(res, 200, vmView(await ctx.vms.reboot(id)));
      if (seg.length === 3 && m === 'POST' && op === 'exec') {
        const b = parseBody(execRequestSchema, await readJson(req, true));
        return send(res, 200, await execInGuest(ctx.vms.get(id), b.command));
      }
      if (seg.length === 3 && m === 'POST' && op === 'forward') {
        const b = parseBody(forwardRequestSchema, await readJson(req, true));
        ctx.vms.get(id);
        const f = await ctx.vms.forward(id, b.port);
        return send(res, 200, { id, port: f.port, address: `127.0.0.1:${f.hostPort}` });
      }
      if (seg.length === 4 && m === 'POST' && op === 'povdesk' && (seg[3] === 'save-clean' || seg[3] === 'reset-clean')) {
        return send(res, 200, vmView(seg[3] === 'save-clean' ? ctx.vms.saveClean(id) : ctx.vms.resetClean(id)));
      }
      if (seg.length === 4 && m === 'PUT' && op === 'povdesk' && seg[3] === 'user-data') {
        // Beyond the document: the user-data the metadata service serves from now on (Skytap's PUT of user_data).
        ctx.vms.get(id);
        const b = parseBody(setUserDataSchema, await readJson(req, true));
        ctx.vms.setUserData(id, b.user_data);
        return send(res, 204);
      }
      if (seg.length === 3 && m === 'GET' && op === 'console') {
        const raw = url.searchParams.get('lines') ?? String(CONSOLE_LINES.default);
        const n = Number(raw);
        if (!/^\d+$/.test(raw) || n < 1 || n > CONSOLE_LINES.max) return fail(res, 'invalid_request', `lines must be a whole number from 1 to ${CONSOLE_LINES.max}, got "${raw}"`);
        const lines = ctx.vms.consoleTail(id, n);
        return send(res, 200, { id, lines: lines.length, console: lines.join('\n') });
      }
      if (seg.length === 3 && m === 'GET' && op === 'attestation') {
        const r = ctx.vms.get(id);
        return send(res, 200, { ...attestationDoc(r), povdesk: attestationView(ctx.stateDir, r) });
      }
      if (seg.length === 3 && m === 'GET' && op === 'metrics') return send(res, 200, metricsView(ctx.vms.get(id), vms()));
      if (seg.length === 3 && m === 'GET' && op === 'report') {
        ctx.vms.get(id);
        return fail(res, 'not_found', `VM ${id} has no systemd-report upload: the guest here reports READY to the metadata service, not a systemd-report`);
      }
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
