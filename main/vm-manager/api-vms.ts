/**
 * The REST API's /vms routes (the route table is in api.ts): create with the body checked against
 * this host's limits and its image resolved in the store, the lifecycle calls on VmService (vms.ts),
 * exec, forwards, the console, attestation and metrics; and this daemon's own `povdesk` routes on
 * a VM (clean state, user-data).
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, relative, resolve, sep } from 'node:path';
import { localCreateVmRequestSchema, setUserDataSchema } from '../vm-api/povdesk';
import { CONSOLE_LINES, CREATE_VM_DEFAULTS, execRequestSchema, forwardRequestSchema } from '../vm-api/schemas';
import { fail, parseBody, readJson, send, type ApiContext, type Handler } from './api-http';
import { VmmError } from './errors';
import { execInGuest } from './exec';
import { imagesDir, insideDir, listImages, TEST_IMAGE } from './images';
import { attestationDoc, attestationView, imageByRef, metricsView, vmView } from './views';

/** Limits of this host on top of the document's (a bad value is an invalid spec: 400). */
export const LIMITS = { cpus: 64, memory_mib: 262144, disk_gib: 4096 } as const;

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

/**
 * The create body as this daemon takes it: the document's, plus `network: "restricted"` as the old
 * name of `default` and the `povdesk` extras. Answers once the VM reached the body's `wait_for`.
 */
async function createVm(ctx: ApiContext, body: unknown) {
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
}

/** The handlers of the /vms routes, by the operation each answers. */
export function vmHandlers(ctx: ApiContext) {
  return {
    list: (a) => send(a.res, 200, ctx.vms.list().map(vmView)),
    create: async (a) => send(a.res, 201, vmView(await createVm(ctx, await readJson(a.req, true)))),
    get: (a) => send(a.res, 200, vmView(ctx.vms.get(a.params.id!))),
    delete: async (a) => {
      await ctx.vms.delete(a.params.id!);
      return send(a.res, 204);
    },
    start: async (a) => send(a.res, 200, vmView(await ctx.vms.start(a.params.id!))),
    stop: async (a) => send(a.res, 200, vmView(await ctx.vms.stop(a.params.id!))),
    reboot: async (a) => send(a.res, 200, vmView(await ctx.vms.reboot(a.params.id!))),
    exec: async (a) => {
      const b = parseBody(execRequestSchema, await readJson(a.req, true));
      return send(a.res, 200, await execInGuest(ctx.vms.get(a.params.id!), b.command));
    },
    forward: async (a) => {
      const id = a.params.id!;
      const b = parseBody(forwardRequestSchema, await readJson(a.req, true));
      ctx.vms.get(id);
      const f = await ctx.vms.forward(id, b.port);
      return send(a.res, 200, { id, port: f.port, address: `127.0.0.1:${f.hostPort}` });
    },
    console: (a) => {
      const raw = a.url.searchParams.get('lines') ?? String(CONSOLE_LINES.default);
      const n = Number(raw);
      if (!/^\d+$/.test(raw) || n < 1 || n > CONSOLE_LINES.max)
        return fail(a.res, 'invalid_request', `lines must be a whole number from 1 to ${CONSOLE_LINES.max}, got "${raw}"`);
      const lines = ctx.vms.consoleTail(a.params.id!, n);
      return send(a.res, 200, { id: a.params.id, lines: lines.length, console: lines.join('\n') });
    },
    attestation: (a) => {
      const r = ctx.vms.get(a.params.id!);
      return send(a.res, 200, { ...attestationDoc(r), povdesk: attestationView(ctx.stateDir, r) });
    },
    metrics: (a) => send(a.res, 200, metricsView(ctx.vms.get(a.params.id!), ctx.vms.list())),
    report: (a) => {
      ctx.vms.get(a.params.id!);
      return fail(
        a.res,
        'not_found',
        `VM ${a.params.id} has no systemd-report upload: the guest here reports READY to the metadata service, not a systemd-report`,
      );
    },
    saveClean: async (a) => send(a.res, 200, vmView(await ctx.vms.saveClean(a.params.id!))),
    resetClean: async (a) => send(a.res, 200, vmView(await ctx.vms.resetClean(a.params.id!))),
    // The user-data the metadata service serves from now on (Skytap's PUT of user_data).
    setUserData: async (a) => {
      const id = a.params.id!;
      ctx.vms.get(id);
      const b = parseBody(setUserDataSchema, await readJson(a.req, true));
      ctx.vms.setUserData(id, b.user_data);
      return send(a.res, 204);
    },
  } satisfies Record<string, Handler>;
}
