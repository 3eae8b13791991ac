/**
 * The REST API's /images routes (the route table is in api.ts): the document's list and get, and
 * this daemon's own image store routes: import, delete, golden values (learn, save), the
 * reference measurements made again, and the guest half of attestation for an image builder.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';
import { GOLDEN_VM_SIZE } from '../../shared/golden-size';
import { fail, parseBody, readJson, send, type ApiContext, type Handler } from './api-http';
import { LIMITS } from './api-vms';
import { GUEST_QUOTE_SCRIPT } from './attest/index';
import { learnWith, saveGolden } from './golden';
import { importImage } from './image-import';
import { deleteImage, DISK_STAGE_PCRS, getImage, insideDir, listImages, remakeReferences } from './images';
import { imageByRef, imageView, localImageView } from './views';

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

/** The handlers of the /images routes (and the attestation agent's), by the operation each answers. */
export function imageHandlers(ctx: ApiContext) {
  /** Resolves an image reference given in the path to the image's name. */
  const imageName = (ref: string) => imageByRef(ctx.stateDir, ref).name;
  return {
    list: (a) => send(a.res, 200, listImages(ctx.stateDir).map(imageView)),
    get: (a) => send(a.res, 200, imageView(imageByRef(ctx.stateDir, a.params.ref!))),
    // The guest half of attestation, for an image builder (bake.start) to put in a disk image,
    // with the PCRs a disk image's quotes must cover.
    attestAgent: (a) => {
      const script = readFileSync(GUEST_QUOTE_SCRIPT, 'utf8');
      return send(a.res, 200, { script, sha256: createHash('sha256').update(script).digest('hex'), pcrs: DISK_STAGE_PCRS });
    },
    import: async (a) => {
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
    delete: (a) => {
      const name = imageName(a.params.ref!);
      const users = ctx.vms
        .list()
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
    learnGolden: async (a) => {
      const b = parseBody(learnGoldenSchema, await readJson(a.req, false));
      return send(a.res, 200, await learnWith(ctx.vms, ctx.stateDir, imageName(a.params.ref!), goldenSize(b)));
    },
    // The reference measurements made again from the image's files (no boot), e.g. after a firmware update.
    remakeReferences: async (a) => {
      parseBody(noFields, await readJson(a.req, false));
      const name = imageName(a.params.ref!);
      const saved = remakeReferences(ctx.stateDir, name);
      return send(a.res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
    },
    saveGolden: async (a) => {
      const b = parseBody(saveGoldenSchema, await readJson(a.req, true));
      const name = imageName(a.params.ref!);
      const saved = saveGolden(ctx.stateDir, name, b.golden, b.firmware ?? null, goldenSize(b));
      return send(a.res, 200, localImageView({ ...getImage(ctx.stateDir, name), policy: saved }));
    },
  } satisfies Record<string, Handler>;
}
