/**
 * The REST API, shaped like giantswarm/vm-manager's /api/v1: snake_case request fields, camelCase
 * records, errors as {"error":{"code","message"}}, a bearer token on every request.
 */
import { timingSafeEqual } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { listZodIssues } from '../../shared/contract/errors';
import { STATUS, VmmError, type VmmCode } from './errors';
import { deleteImage, getImage, imagesDir, importImage, insideDir, listImages, TEST_IMAGE } from './images';
import { VM_NETWORKS, type VmNetwork } from './argv';
import { firmwareChange, learnWith, saveGolden } from './golden';
import { findOvmf, type HostReport } from './host';
import type { VmRecord, VmService } from './vms';

const MAX_BODY = 8 * 1024 * 1024;
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const createVmSchema = z
  .object({
    name: z.string().max(63, 'name must be at most 63 characters').regex(DNS_LABEL, 'name must be a DNS label: lowercase letters, digits and -, not starting or ending with -'),
    image: z.string().min(1).max(4096).optional(),
    cpus: z.number().int('cpus must be a whole number').min(1, 'cpus must be at least 1').max(64, 'cpus must be at most 64').optional(),
    memory_mib: z.number().int('memory_mib must be a whole number').min(256, 'memory_mib must be at least 256').max(262144, 'memory_mib must be at most 262144').optional(),
    disk_gib: z.number().int('disk_gib must be a whole number').min(1, 'disk_gib must be at least 1').max(4096, 'disk_gib must be at most 4096').optional(),
    user_data: z.string().max(MAX_BODY).optional(),
    require_attestation: z.boolean().optional(),
    wait_for: z.enum(['none', 'attested', 'ready']).optional(),
    network: z.enum(VM_NETWORKS as [VmNetwork, ...VmNetwork[]]).optional(),
  })
  .strict();
export type CreateVmBody = z.infer<typeof createVmSchema>;

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 value: 64 lower-case hex characters');
const saveGoldenSchema = z
  .object({
    golden: z.record(z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23'), hex64),
    firmware: z.object({ path: z.string().min(1).max(4096), sha256: hex64 }).strict().nullable().optional(),
  })
  .strict();

const importSchema = z.object({ path: z.string().min(1).max(4096), name: z.string().regex(DNS_LABEL, 'name must be a DNS label').optional() }).strict();

/** Parse options that name the fields the API takes when a body carries one it does not. */
const UNKNOWN_FIELD: z.core.ParseContext<z.core.$ZodIssue> = {
  error: (i) =>
    i.code === 'unrecognized_keys'
      ? `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}: the fields are name, image, cpus, memory_mib, disk_gib, user_data, require_attestation, wait_for, network`
      : undefined,
};

export interface ApiContext {
  stateDir: string;
  token: string;
  vms: VmService;
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

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const d of req) {
    size += (d as Buffer).length;
    if (size > MAX_BODY) throw new VmmError('invalid_request', `the body is over ${MAX_BODY} bytes`);
    parts.push(d as Buffer);
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new VmmError('invalid_request', `the body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Resolves the create body's image: a name in the store, or a path that must lie in the store. */
export function resolveImageRef(stateDir: string, ref: string): string {
  if (!ref.includes('/')) return getImage(stateDir, ref).name;
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

export function attestationView(stateDir: string, r: VmRecord) {
  let golden: Record<string, string> = {};
  let compared: number[] = [];
  let recordOnly: number[] = [];
  try {
    const p = getImage(stateDir, r.image).policy;
    if (p) {
      golden = p.golden.sha256;
      recordOnly = p.record_only ?? [];
      compared = [...new Set([...p.pcrs.initrd, ...p.pcrs.ready])].filter((n) => n !== 11 && n !== 13 && !recordOnly.includes(n));
    }
  } catch {
    // image gone: no golden values to show
  }
  const latest = r.attestation.ready ?? r.attestation.initrd;
  const pcrs = latest?.pcrs ?? {};
  const table = Object.keys(pcrs)
    .sort((a, b) => Number(a) - Number(b))
    .map((pcr) => ({
      pcr,
      value: pcrs[pcr] ?? '',
      golden: golden[pcr] ?? null,
      compared: compared.includes(Number(pcr)),
      match: golden[pcr] === undefined ? null : golden[pcr] === pcrs[pcr],
    }));
  return { id: r.id, image: r.image, state: r.state, stage: r.attestation.ready ? 'ready' : r.attestation.initrd ? 'initrd' : null, ...r.attestation, table };
}

/**
 * DNS rebinding: over TCP only the exact address:port the manager listens on is a valid Host (a unix
 * socket has none to check, so `allowed` is null there). The refusal's message, or null when allowed.
 */
export function hostRefusal(req: IncomingMessage, allowed: string | null): string | null {
  if (allowed === null || req.headers.host === allowed) return null;
  return `Host "${req.headers.host ?? ''}" is not this vm-manager (${allowed}); call it by that address (a page on another name is refused: DNS rebinding)`;
}

export function createApiHandler(ctx: ApiContext) {
  const send = (res: ServerResponse, status: number, body?: unknown) => {
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) }).end(text);
  };
  const fail = (res: ServerResponse, code: VmmCode, message: string) => send(res, STATUS[code], { error: { code, message } });

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
    const seg = p.split('/').filter(Boolean);

    if (m === 'GET' && p === '/host') return send(res, 200, await ctx.host());
    if (m === 'GET' && p === '/images') return send(res, 200, listImages(ctx.stateDir).map(imageView));
    if (m === 'GET' && seg[0] === 'images' && seg.length === 2) return send(res, 200, imageView(getImage(ctx.stateDir, seg[1] ?? '')));
    if (m === 'DELETE' && seg[0] === 'images' && seg.length === 2) {
      const name = getImage(ctx.stateDir, seg[1] ?? '').name;
      const users = ctx.vms.list().filter((v) => v.image === name).map((v) => v.id);
      if (users.length) return fail(res, 'conflict', `image "${name}" is used by VM ${users.join(', ')}: delete the VM${users.length > 1 ? 's' : ''} first`);
      deleteImage(ctx.stateDir, name);
      return send(res, 204);
    }
    if (m === 'POST' && p === '/images') {
      const parsed = importSchema.safeParse(await readJson(req), UNKNOWN_FIELD);
      if (!parsed.success) return fail(res, 'invalid_request', listZodIssues(parsed.error, 'body'));
      const abs = resolve(ctx.stateDir, parsed.data.path);
      if (!insideDir(ctx.stateDir, abs)) return fail(res, 'invalid_request', `${abs} is outside the state dir ${resolve(ctx.stateDir)}: copy the file under it first (the API imports only from there)`);
      return send(res, 201, importImage(ctx.stateDir, abs, { name: parsed.data.name }));
    }
    if (m === 'POST' && seg[0] === 'images' && seg.length === 3 && seg[2] === 'learn-golden') {
      return send(res, 200, await learnWith(ctx.vms, ctx.stateDir, getImage(ctx.stateDir, seg[1] ?? '').name));
    }
    if (m === 'PUT' && seg[0] === 'images' && seg.length === 3 && seg[2] === 'golden') {
      const parsed = saveGoldenSchema.safeParse(await readJson(req), UNKNOWN_FIELD);
      if (!parsed.success) return fail(res, 'invalid_request', listZodIssues(parsed.error, 'body'));
      const saved = saveGolden(ctx.stateDir, seg[1] ?? '', parsed.data.golden, parsed.data.firmware ?? null);
      return send(res, 200, imageView({ ...getImage(ctx.stateDir, seg[1] ?? ''), policy: saved }));
    }
    if (m === 'GET' && p === '/vms') return send(res, 200, ctx.vms.list());
    if (m === 'POST' && p === '/vms') {
      const parsed = createVmSchema.safeParse(await readJson(req), UNKNOWN_FIELD);
      if (!parsed.success) return fail(res, 'invalid_request', listZodIssues(parsed.error, 'body'));
      const b = parsed.data;
      const image = resolveImageRef(ctx.stateDir, b.image ?? TEST_IMAGE);
      const waitFor = b.wait_for ?? 'ready';
      const rec = await ctx.vms.create({
        name: b.name, image, cpus: b.cpus ?? 1, memoryMiB: b.memory_mib ?? 512, diskGiB: b.disk_gib ?? 8,
        userData: b.user_data ?? null, requireAttestation: b.require_attestation ?? true, waitFor, network: b.network ?? 'restricted',
      });
      if (waitFor === 'none') return send(res, 201, rec);
      const done = await ctx.vms.waitFor(rec.id, waitFor, ctx.vms.timeouts.bootMs + ctx.vms.timeouts.startMs);
      return send(res, 201, done);
    }
    if (seg[0] === 'vms' && seg[1]) {
      const id = seg[1];
      if (!/^[0-9a-f]{8}$/.test(id)) return fail(res, 'not_found', `"${id}" is not a VM id (8 hex characters)`);
      if (seg.length === 2 && m === 'GET') return send(res, 200, ctx.vms.get(id));
      if (seg.length === 2 && m === 'DELETE') {
        await ctx.vms.delete(id);
        return send(res, 204);
      }
      if (seg.length === 3 && m === 'POST' && seg[2] === 'start') return send(res, 200, await ctx.vms.start(id));
      if (seg.length === 3 && m === 'POST' && seg[2] === 'stop') return send(res, 200, await ctx.vms.stop(id));
      if (seg.length === 3 && m === 'POST' && seg[2] === 'reboot') return send(res, 200, await ctx.vms.reboot(id));
      if (seg.length === 3 && m === 'GET' && seg[2] === 'console') {
        const raw = url.searchParams.get('lines') ?? '100';
        const n = Number(raw);
        if (!/^\d+$/.test(raw) || n < 1 || n > 10000) return fail(res, 'invalid_request', `lines must be a whole number from 1 to 10000, got "${raw}"`);
        const lines = ctx.vms.consoleTail(id, n);
        return send(res, 200, { id, lines: lines.length, console: lines.join('\n') });
      }
      if (seg.length === 3 && m === 'GET' && seg[2] === 'attestation') return send(res, 200, attestationView(ctx.stateDir, ctx.vms.get(id)));
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

function imageView(i: ReturnType<typeof listImages>[number]) {
  const { dir, policy, ...rest } = i;
  return {
    ...rest,
    path: dir,
    policy: policy
      ? {
        pcrs: policy.pcrs, recordOnly: policy.record_only ?? [], golden: policy.golden.sha256, goldenCount: Object.keys(policy.golden.sha256).length,
        firmware: policy.golden_firmware ?? null, firmwareChanged: firmwareChange(policy, findOvmf()?.code ?? null),
      }
      : null,
  };
}
