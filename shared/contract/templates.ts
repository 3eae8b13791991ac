import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { runnerScriptView } from './control-node';
import { osValue } from './pov';
import { jobStarted, method, noArgs, lazyMethods } from './define';
import { BAKE_STAGES, LOCAL_TEMPLATE_MAX_VMS } from './values';

export { BAKE_STAGES, LOCAL_TEMPLATE_MAX_VMS };

/**
 * Offline template baking: a source image (or a minimal Debian built from Debian's packages) gets
 * the control node's runner, Docker and open-vm-tools, is proven by a boot in the local
 * vm-manager, and is exported as OVA/OVF/VMDK for Skytap's import. `templates.runnerScript` shows
 * the same runner the control node runs, for typing into a template by hand.
 */

const dnsLabel = lazySchema(() => z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a DNS label: lower-case letters, digits and -, not starting or ending with -'));

/** A Debian package name as dpkg defines it (policy 5.6.1). */
const debPackage = lazySchema(() => z.string().regex(/^[a-z0-9][a-z0-9+.-]{1,99}$/, 'a Debian package name (lower-case letters, digits, + - .)'));

export const bakeSource = lazySchema(() => z.union(
  [z.string().trim().min(1).max(4096).describe('an image file: qcow2, raw, vmdk, .ova or .ovf'), z.strictObject({ debian: z.literal('bookworm') })],
  { error: 'source must be the path of an image file (qcow2, raw, vmdk, .ova, .ovf) or {"debian":"bookworm"}' },
));
export type BakeSource = z.infer<typeof bakeSource>;

export type BakeStage = (typeof BAKE_STAGES)[number];

export const bakeArgs = lazySchema(() => z.strictObject({
  source: bakeSource,
  name: dnsLabel,
  /** auto: install docker.io when the guest has no runtime; skip: never touch Docker */
  docker: z.enum(['auto', 'skip']).optional(),
  extraPackages: z.array(debPackage).max(50).optional(),
  /** grow the disk to this size first (the root partition and file system grow with it) */
  sizeGib: z.number().int().min(2).max(4000).optional(),
  /** docker-archive tars (docker save) in the allowed dirs: loaded into the guest's Docker before its runner starts */
  preloadImages: z.array(z.string().trim().min(1).max(4096)).max(8).optional(),
}));
export type BakeArgs = z.infer<typeof bakeArgs>;

export const bakeManifest = lazySchema(() => z.strictObject({
  name: z.string(),
  createdAt: z.string(),
  source: z.string(),
  /** sha256 of the source file as picked (the OVA, OVF descriptor or disk), or of the cached Debian base disk */
  baseSha256: z.string().regex(/^[0-9a-f]{64}$/),
  guest: z.strictObject({ distro: z.string(), version: z.string(), product: z.string(), codename: z.string() }),
  runner: z.strictObject({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/), unit: z.string() }),
  docker: z.enum(['installed', 'present', 'skipped']),
  /** packages installed by the bake: name → version */
  packages: z.record(z.string(), z.string()),
  cloudInit: z.enum(['disabled', 'absent']),
  stages: z.record(z.string(), z.number()),
}));
export type BakeManifest = z.infer<typeof bakeManifest>;

export const proofResult = lazySchema(() => z.strictObject({
  passed: z.boolean(),
  at: z.string(),
  seconds: z.number(),
  /** what the probe payload reported from inside the guest */
  dockerEnabled: z.string().nullable(),
  runnerSha256: z.string().nullable(),
  message: z.string(),
  consoleTail: z.string(),
  /**
   * The proof VM's attestation: required when the image has reference measurements (its user-data,
   * so the probe, came only after the guest's quote and event log verified against them); the
   * initrd quote's verdict and the events checked. Absent in proofs from before.
   */
  attestation: z.strictObject({
    required: z.boolean(),
    verified: z.boolean().nullable(),
    message: z.string(),
    events: z.strictObject({ count: z.number().int(), checked: z.number().int(), allowed: z.number().int() }).nullable(),
  }).optional(),
}));
export type ProofResult = z.infer<typeof proofResult>;

export const bakedImage = lazySchema(() => z
  .strictObject({ name: z.string(), manifest: bakeManifest, proof: proofResult.nullable(), exports: z.array(z.string()) }));
export type BakedImage = z.infer<typeof bakedImage>;

export const exportArgs = lazySchema(() => z.strictObject({
  imageId: dnsLabel,
  format: z.enum(['ova', 'ovf', 'vmdk']),
  /** where the files go; default <home>/templates/exports/<image> */
  dir: z.string().trim().min(1).max(4096).optional(),
}));

export const exportResult = lazySchema(() => z
  .strictObject({ files: z.array(z.strictObject({ path: z.string(), bytes: z.number().int(), sha256: z.string() })) }));

/**
 * Local templates: a named set of images in the connected vm-manager, each with a VM name, OS and
 * size; `pov.create {platform:'local'}` makes one VM per entry. Stored as JSON files by
 * main/services/lab-platforms/local-templates.ts; the bundled test template comes first. At most LOCAL_TEMPLATE_MAX_VMS VMs (values.ts).
 */

/** Ids are safe file names and fit pov.create's templateId (letters, digits, - and _, at most 40). */
export const localTemplateId = lazySchema(() => z
  .string()
  .min(1)
  .max(40)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a local template id: lower-case letters, digits and -'));
/** A VM's size: the bounds vm.create takes. */
export const localTemplateVm = lazySchema(() => z.strictObject({
  /** short, so the POV's tag still fits in a DNS label before it */
  name: dnsLabel.max(30, 'at most 30 characters (the POV tag goes before it)'),
  image: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'an image name: printable characters, no spaces'),
  os: osValue,
  cpus: z.number().int().min(1).max(64),
  memoryMib: z.number().int().min(256).max(1_048_576),
  diskGib: z.number().int().min(1).max(4096),
  requireAttestation: z.boolean(),
}));
const localTemplateFields = () => ({
  name: z.string().trim().min(1).max(80).regex(/^[^\x00-\x1f\x7f]+$/, 'no control characters'),
  description: z.string().trim().max(500).nullable().optional(),
  vms: z
    .array(localTemplateVm.extend({ requireAttestation: z.boolean().optional() }).strict())
    .min(1, 'a template needs at least one VM')
    .max(LOCAL_TEMPLATE_MAX_VMS, `at most ${LOCAL_TEMPLATE_MAX_VMS} VMs`)
    .refine((vms) => new Set(vms.map((v) => v.name)).size === vms.length, 'VM names must be unique within a template'),
});
export const createLocalTemplateArgs = lazySchema(() => z.strictObject(localTemplateFields()));
export type CreateLocalTemplateArgs = z.input<typeof createLocalTemplateArgs>;
/** The whole template again, under the id it keeps (POVs made from it keep their VMs). */
export const updateLocalTemplateArgs = lazySchema(() => z.strictObject({ id: localTemplateId, ...localTemplateFields() }));
export type UpdateLocalTemplateArgs = z.input<typeof updateLocalTemplateArgs>;

/** The lab platforms whose templates templates.list shows. */
export const labTemplatePlatform = lazySchema(() => z.enum(['skytap', 'local']));
/** A template of either platform: Skytap's (image null, never built in) or a local one. */
export const labTemplateView = lazySchema(() => z.strictObject({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  builtIn: z.boolean(),
  /** Skytap's list may carry no VMs: then []. The size fields are a local template's only. */
  vms: z.array(z.strictObject({
    name: z.string(),
    os: osValue,
    image: z.string().nullable(),
    cpus: z.number().int().optional(),
    memoryMib: z.number().int().optional(),
    diskGib: z.number().int().optional(),
    requireAttestation: z.boolean().optional(),
  })),
}));
export type LabTemplateView = z.infer<typeof labTemplateView>;

export const templatesMethods = lazyMethods({
  'templates.runnerScript': () => method(
    'The template runner (and its systemd unit) to bake into a control-node template, with per-line checksums',
    noArgs,
    runnerScriptView,
  ),
  'templates.bake': () => method(
    'Bake a control-node template: source image or {"debian":"bookworm"} → runner, Docker, open-vm-tools → proof boot in the local vm-manager',
    bakeArgs,
    jobStarted,
    { job: true },
  ),
  'templates.baked': () => method('Baked images with their build manifest and proof result', noArgs, z.strictObject({ images: z.array(bakedImage) })),
  'templates.export': () => method(
    'Export a baked image for Skytap import: OVF 1.0 + stream-optimized VMDK + SHA256 manifest (tarred as OVA)',
    exportArgs,
    jobStarted,
    { job: true },
  ),
  'templates.list': () => method(
    "A lab platform's templates: Skytap's catalogue (as skytap.listTemplates), or the local templates with the bundled test template first",
    z.strictObject({ platform: labTemplatePlatform }),
    z.strictObject({ platform: labTemplatePlatform, templates: z.array(labTemplateView) }),
  ),
  'templates.createLocal': () => method(
    "Save a local template: 1 to 8 VMs, each an image in the connected vm-manager with a name, OS and size; the name must be new",
    createLocalTemplateArgs,
    z.strictObject({ template: labTemplateView }),
  ),
  'templates.updateLocal': () => method(
    'Change a local template in place: its name, description and VMs, checked as on create; the id stays, the bundled test template cannot be changed, and POVs made from it keep their VMs',
    updateLocalTemplateArgs,
    z.strictObject({ template: labTemplateView }),
  ),
  'templates.deleteLocal': () => method(
    'Delete a local template (the bundled test template cannot be deleted); POVs made from it keep their VMs',
    z.strictObject({ id: localTemplateId }),
    z.strictObject({}),
  ),
});
