import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { runnerScriptView } from './control-node';
import { jobStarted, method, noArgs, lazyMethods } from './define';
import { BAKE_STAGES } from './values';

export { BAKE_STAGES };

/**
 * Offline template baking: a source image (or a minimal Debian built from Debian's packages) gets
 * the control node's runner, Docker and open-vm-tools, is proven by a boot in the local
 * vm-manager, and is exported as OVA/OVF/VMDK for Skytap's import. `bake.runnerScript` shows
 * the same runner the control node runs, for typing into a template by hand.
 */

/** A DNS label: a baked image's name; local lab templates' VM names build on it. */
export const dnsLabel = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(63)
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a DNS label: lower-case letters, digits and -, not starting or ending with -'),
);

/** A Debian package name as dpkg defines it (policy 5.6.1). */
const debPackage = lazySchema(() =>
  z.string().regex(/^[a-z0-9][a-z0-9+.-]{1,99}$/, 'a Debian package name (lower-case letters, digits, + - .)'),
);

export const bakeSource = lazySchema(() =>
  z.union(
    [
      z.string().trim().min(1).max(4096).describe('an image file: qcow2, raw, vmdk, .ova or .ovf'),
      z.strictObject({ debian: z.literal('bookworm') }),
    ],
    { error: 'source must be the path of an image file (qcow2, raw, vmdk, .ova, .ovf) or {"debian":"bookworm"}' },
  ),
);
export type BakeSource = z.infer<typeof bakeSource>;

export type BakeStage = (typeof BAKE_STAGES)[number];

export const bakeArgs = lazySchema(() =>
  z.strictObject({
    source: bakeSource,
    name: dnsLabel,
    /** auto: install docker.io when the guest has no runtime; skip: never touch Docker */
    docker: z.enum(['auto', 'skip']).optional(),
    extraPackages: z.array(debPackage).max(50).optional(),
    /** grow the disk to this size first (the root partition and file system grow with it) */
    sizeGib: z.number().int().min(2).max(4000).optional(),
    /** docker-archive tars (docker save) in the allowed dirs: loaded into the guest's Docker before its runner starts */
    preloadImages: z.array(z.string().trim().min(1).max(4096)).max(8).optional(),
  }),
);
export type BakeArgs = z.infer<typeof bakeArgs>;

export const bakeManifest = lazySchema(() =>
  z.strictObject({
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
  }),
);
export type BakeManifest = z.infer<typeof bakeManifest>;

export const proofResult = lazySchema(() =>
  z.strictObject({
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
    attestation: z
      .strictObject({
        required: z.boolean(),
        verified: z.boolean().nullable(),
        message: z.string(),
        events: z.strictObject({ count: z.number().int(), checked: z.number().int(), allowed: z.number().int() }).nullable(),
      })
      .optional(),
  }),
);
export type ProofResult = z.infer<typeof proofResult>;

export const bakedImage = lazySchema(() =>
  z.strictObject({ name: z.string(), manifest: bakeManifest, proof: proofResult.nullable(), exports: z.array(z.string()) }),
);
export type BakedImage = z.infer<typeof bakedImage>;

export const exportArgs = lazySchema(() =>
  z.strictObject({
    imageId: dnsLabel,
    format: z.enum(['ova', 'ovf', 'vmdk']),
    /** where the files go; default <home>/templates/exports/<image> */
    dir: z.string().trim().min(1).max(4096).optional(),
  }),
);

export const exportResult = lazySchema(() =>
  z.strictObject({ files: z.array(z.strictObject({ path: z.string(), bytes: z.number().int(), sha256: z.string() })) }),
);

export const bakeMethods = lazyMethods({
  'bake.runnerScript': () =>
    method(
      'The template runner (and its systemd unit) to bake into a control-node template, with per-line checksums',
      noArgs,
      runnerScriptView,
    ),
  'bake.start': () =>
    method(
      'Bake a control-node template: source image or {"debian":"bookworm"} → runner, Docker, open-vm-tools → proof boot in the ' +
        'local vm-manager',
      bakeArgs,
      jobStarted,
      { job: true },
    ),
  'bake.list': () =>
    method('Baked images with their build manifest and proof result', noArgs, z.strictObject({ images: z.array(bakedImage) })),
  'bake.export': () =>
    method(
      'Export a baked image for Skytap import: OVF 1.0 + stream-optimized VMDK + SHA256 manifest (tarred as OVA)',
      exportArgs,
      jobStarted,
      { job: true },
    ),
});
