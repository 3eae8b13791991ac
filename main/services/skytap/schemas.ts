import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import type { GuestOs } from '../../../shared/contract/values';

/**
 * The shapes Skytap answers with (see docs/skytap.md and /work/shared/research/skytap-api.md).
 * Objects are loose: Skytap returns many more fields than these, and new ones must not break us.
 * The fields the app relies on are checked strictly; a missing or mistyped one is an error that
 * names the field (see SkytapHttp.parse in http.ts).
 */

/** Skytap ids are JSON strings even when numeric. */
const skytapId = lazySchema(() => z.string().min(1));
/** Optional text fields that Skytap sends as null, "" or not at all. */
const optText = lazySchema(() =>
  z
    .string()
    .nullish()
    .transform((v) => v ?? null),
);

export const ENV_RUNSTATES = ['running', 'suspended', 'stopped', 'halted', 'busy'] as const;
export type EnvRunstate = (typeof ENV_RUNSTATES)[number];
export const VM_RUNSTATES = ['running', 'suspended', 'stopped', 'halted', 'reset', 'busy'] as const;
export type VmRunstate = (typeof VM_RUNSTATES)[number];

/**
 * A published service (`services[]` of an interface): the guest's internal_port NATed to
 * external_ip:external_port (external_ip is often a host name, e.g. services-uswest.skytap.com).
 */
export const publishedServiceSchema = lazySchema(() =>
  z.looseObject({
    internal_port: z.number().int().min(1).max(65535),
    external_ip: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[A-Za-z0-9.:-]+$/),
    external_port: z.number().int().min(1).max(65535),
  }),
);
export type PublishedService = z.infer<typeof publishedServiceSchema>;

export const interfaceSchema = lazySchema(() =>
  z.looseObject({
    id: z.string().nullish(),
    ip: optText,
    hostname: optText,
    network_type: optText,
    network_id: z
      .union([z.string(), z.number()])
      .nullish()
      .transform((v) => (v === null || v === undefined || v === '' ? null : String(v))),
    network_name: optText,
    mac: optText,
    /** Display only: an entry that does not parse is left out rather than failing the VM read. */
    services: z
      .array(z.unknown())
      .nullish()
      .transform((v) =>
        (v ?? []).flatMap((x) => {
          const r = publishedServiceSchema.safeParse(x);
          return r.success ? [r.data] : [];
        }),
      ),
  }),
);
export type VmInterface = z.infer<typeof interfaceSchema>;

export const hardwareSchema = lazySchema(() =>
  z.looseObject({
    /** A VMware guest-type identifier chosen for the VM (e.g. "centos-64", "windows9srv-64"). */
    guestOS: optText,
    architecture: optText,
    cpus: z.number().nullish(),
    ram: z.number().nullish(),
  }),
);
export type VmHardware = z.infer<typeof hardwareSchema>;

export const vmSchema = lazySchema(() =>
  z.looseObject({
    id: skytapId,
    name: z.string(),
    runstate: z.enum(VM_RUNSTATES),
    rate_limited: z
      .boolean()
      .nullish()
      .transform((v) => v ?? false),
    hardware: hardwareSchema.nullish().transform((v) => v ?? { guestOS: null, architecture: null }),
    interfaces: z
      .array(interfaceSchema)
      .nullish()
      .transform((v) => v ?? []),
  }),
);
export type Vm = z.infer<typeof vmSchema>;

export const templateSchema = lazySchema(() =>
  z.looseObject({
    id: skytapId,
    name: z.string(),
    /** Templates report busyness with a boolean; environments with runstate "busy". */
    busy: z
      .boolean()
      .nullish()
      .transform((v) => v ?? false),
    description: optText,
    region: optText,
    vm_count: z.number().int().nonnegative().nullish(),
    vms: z
      .array(vmSchema)
      .nullish()
      .transform((v) => v ?? []),
  }),
);
export type Template = z.infer<typeof templateSchema>;

export const environmentSchema = lazySchema(() =>
  z.looseObject({
    id: skytapId,
    name: z.string(),
    runstate: z.enum(ENV_RUNSTATES),
    /** True when Skytap has queued a power operation under load: keep polling, never re-submit. */
    rate_limited: z
      .boolean()
      .nullish()
      .transform((v) => v ?? false),
    description: optText,
    region: optText,
    vm_count: z.number().int().nonnegative().nullish(),
    errors: z
      .array(z.string())
      .nullish()
      .transform((v) => v ?? []),
    vms: z
      .array(vmSchema)
      .nullish()
      .transform((v) => v ?? []),
  }),
);
export type Environment = z.infer<typeof environmentSchema>;

export const templateList = lazySchema(() => z.array(templateSchema));
export const environmentList = lazySchema(() => z.array(environmentSchema));
export const vmList = lazySchema(() => z.array(vmSchema));
export const userDataSchema = lazySchema(() =>
  z.looseObject({
    contents: z
      .string()
      .nullish()
      .transform((v) => v ?? ''),
  }),
);

/** Skytap's error bodies: `{"errors": [...]}` or `{"error": "..."}`. */
export const errorBody = lazySchema(() =>
  z.looseObject({
    errors: z.array(z.unknown()).optional(),
    error: z.unknown().optional(),
  }),
);

export type { GuestOs };

/**
 * Linux families as they appear in VMware guest identifiers (lower-cased prefixes). Anything
 * containing "linux" also counts (otherLinux64, other26xLinux, oracleLinux7, amazonlinux2...).
 */
const LINUX_PREFIXES = [
  'centos',
  'rhel',
  'redhat',
  'ubuntu',
  'debian',
  'sles',
  'suse',
  'opensuse',
  'fedora',
  'oraclelinux',
  'rocky',
  'almalinux',
  'asianux',
  'mandrake',
  'mandriva',
  'turbolinux',
  'coreos',
  'vmware-photon',
  'vmwarephoton',
  'photon',
  'amazonlinux',
  'miraclelinux',
  'pardus',
  'flatcar',
];

/**
 * The guest OS family from what Skytap reports. Skytap has no OS field: the only hint is
 * hardware.guestOS, a VMware guest-type identifier. Blank or unrecognised → 'unknown', never a
 * guess (Solaris, FreeBSD, "other-64", AIX and IBM i are unknown too: they are neither family).
 */
export function inferOs(vm: { hardware?: { guestOS?: string | null } | null }): GuestOs {
  const raw = vm.hardware?.guestOS;
  if (typeof raw !== 'string') return 'unknown';
  const id = raw.trim().toLowerCase();
  if (id === '') return 'unknown';
  if (/^win(dows|net|xp|vista|longhorn|2000|31|95|98|me|nt|7|8)/.test(id)) return 'windows';
  if (id.includes('linux')) return 'linux';
  if (LINUX_PREFIXES.some((p) => id.startsWith(p))) return 'linux';
  return 'unknown';
}
