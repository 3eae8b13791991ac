/**
 * The vm-manager's answers (already validated against giantswarm's document by the client) turned
 * into the app's contract views. Everything the views need is in the document; what the app's own
 * daemon sends beyond it under `povdesk` (forwarded SSH port, host key, accelerator probes, PCR
 * values, tool list) is read when present, checked here, and otherwise left null: a cluster's
 * manager lacks it.
 */
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, describeZodError } from '../../../shared/contract/errors';
import {
  eventCheck,
  vmLearnedGolden,
  type PcrRow,
  type VmAttestation,
  type VmHost,
  type VmImage,
  type VmLearnedGolden,
  type VmRecord,
} from '../../../shared/contract/vm';
import type { Loose } from '../../vm-api/client';
import type { ApiVm, Attestation, Host, Image } from '../../vm-api/schemas';

const str = lazySchema(() => z.string());
const nstr = lazySchema(() =>
  z
    .string()
    .nullable()
    .optional()
    .transform((v) => v ?? null),
);
const nnum = lazySchema(() =>
  z
    .number()
    .nullable()
    .optional()
    .transform((v) => v ?? null),
);

/** Parses a value the app needs in a shape; a wrong shape is `internal` with the field named. */
export function parseAnswer<S extends z.ZodType>(what: string, schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new AppError(
      'internal',
      describeZodError(`the vm-manager's answer to ${what} is not what this app understands (is it a newer or other vm-manager?)`, r.error),
    );
  }
  return r.data;
}

/** The local daemon's extras beside the documented fields (`povdesk`), or {} from another manager. */
export function extrasOf(v: unknown): Record<string, unknown> {
  const x = (v as { povdesk?: unknown } | null)?.povdesk;
  return x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : {};
}

/** An optional extra of the local daemon: its value when it has the shape, else null. */
function extra<S extends z.ZodType>(schema: S, value: unknown): z.output<S> | null {
  if (value === undefined || value === null) return null;
  const r = schema.safeParse(value);
  return r.success ? r.data : null;
}

// ---- host ------------------------------------------------------------------------------------

const extraTool = lazySchema(() => z.object({ found: z.boolean(), version: nstr, error: nstr }));
const extraAccel = lazySchema(() =>
  z.object({
    chosen: nstr,
    reason: str,
    warning: nstr,
    probes: z
      .array(z.object({ accel: str, result: str, detail: str }))
      .optional()
      .default([]),
  }),
);
const missingItem = lazySchema(() =>
  z.union([z.string().transform((what) => ({ what, install: '' })), z.object({ what: str, install: str })]),
);

/** The daemon's own report (when the manager cannot start, the app makes it itself) has the same extras. */
export type HostAnswer = Loose<Host> | Record<string, unknown>;

export function hostView(raw: HostAnswer, endpoint: string, mode: 'local' | 'remote', managerError: string | null = null): VmHost {
  const doc = raw as Record<string, unknown>;
  const local = extrasOf(raw);
  // the daemon's own report (under povdesk, or the whole value when the app made it itself)
  const own = Object.keys(local).length ? local : 'accelerator' in doc ? doc : null;
  const h = own ?? doc;
  const tool = (name: string, v: unknown) => {
    const t = extra(extraTool, v);
    return { name, found: t?.found ?? false, version: t?.version ?? null, error: t ? t.error : 'not reported by the vm-manager' };
  };
  const tools = own
    ? [
        tool('qemu-system-x86_64', own.qemu),
        tool('qemu-img', own.qemuImg),
        tool('swtpm', own.swtpm),
        tool('tpm2-tools', own.tpm2Tools),
        tool('busybox', own.busybox),
      ]
    : [tool('qemu-system-x86_64', doc.qemu), tool('swtpm', doc.swtpm), tool('systemd', doc.systemd)];
  const kvm = extra(z.object({ path: str, accessible: z.boolean(), error: z.string().optional() }), doc.kvm);
  const accelerator = extra(extraAccel, h.accelerator) ?? {
    chosen: kvm?.accessible ? 'kvm' : null,
    reason: kvm
      ? kvm.accessible
        ? `${kvm.path} is accessible`
        : (kvm.error ?? `${kvm.path} is not accessible`)
      : 'not reported by the vm-manager',
    warning: null,
    probes: [],
  };
  return {
    endpoint,
    mode,
    managerError,
    hostname: parseAnswer('GET /host', str, doc.hostname),
    kernel: typeof doc.kernel === 'string' ? doc.kernel : '',
    platformNote: extra(str, h.platformNote),
    cpus: parseAnswer('GET /host', z.number(), doc.cpus),
    memoryBytes: parseAnswer('GET /host', z.number(), doc.memoryBytes),
    tools,
    ovmfCode: extra(str, doc.ovmfCode),
    guestKernel: extra(str, h.guestKernel),
    accelerator,
    ready: parseAnswer('GET /host', z.boolean(), doc.ready),
    // the daemon's items with install lines when it sends them, else the document's names
    missing: (own ? extra(z.array(missingItem), own.missing) : null) ?? extra(z.array(missingItem), doc.missing) ?? [],
  };
}

// ---- VMs ---------------------------------------------------------------------------------------

const seconds = (from?: string, to?: string) => (from && to ? Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000) : null);
const durations = lazySchema(() => z.object({ installSeconds: nnum, bootSeconds: nnum, readySeconds: nnum }));

export function vmView(v: Loose<ApiVm>): VmRecord {
  const ext = extrasOf(v);
  return {
    id: v.id,
    name: v.name,
    image: v.image,
    cpus: v.cpus,
    memoryMib: v.memoryMiB,
    diskGib: v.diskGiB,
    requireAttestation: v.requireAttestation,
    state: v.state,
    accel: extra(str, ext.accel),
    createdAt: v.createdAt,
    startedAt: extra(str, ext.startedAt),
    bootedAt: v.bootedAt ?? null,
    readyAt: v.readyAt ?? null,
    durations: extra(durations, ext.durations) ?? {
      installSeconds: seconds(v.createdAt, v.installedAt),
      bootSeconds: null,
      readySeconds: seconds(v.bootedAt, v.readyAt),
    },
    lastError: v.lastError ?? null,
    attestation: {
      required: v.attestation.required,
      userDataReleased: v.attestation.userDataReleased,
      initrdVerified: v.attestation.initrd ? v.attestation.initrd.verified : null,
      readyVerified: v.attestation.ready ? v.attestation.ready.verified : null,
    },
    sshPort: extra(z.object({ ssh: z.number().int().min(1).max(65535) }), ext.ports)?.ssh ?? null,
    sshHostKey: extra(z.object({ publicKey: z.string().regex(/^ssh-ed25519 [A-Za-z0-9+/]+=*$/) }), ext.sshHostKey)?.publicKey ?? null,
    ip: v.ip ?? null,
  };
}

/** The serial socket of a local VM (the daemon's extra in paths). */
export function serialSocket(v: Loose<ApiVm>): string | null {
  return extra(str, extrasOf(v).serialSocket);
}

// ---- images ------------------------------------------------------------------------------------

const policyExtras = lazySchema(() =>
  z.object({
    recordOnly: z.array(z.number()).optional().default([]),
    golden: z.record(z.string(), z.string()).optional().default({}),
    goldenCount: z.number().optional(),
    firmwareChanged: nstr,
    goldenSizes: z
      .array(z.object({ cpus: z.number(), memoryMiB: z.number() }))
      .optional()
      .default([]),
    references: z
      .object({
        madeAt: str,
        firmware: z.object({ code: str }).passthrough(),
        boot: z
          .object({
            kind: str,
            kernel: str.optional(),
            initrd: str.optional(),
            cmdline: str.optional(),
            efiApps: z.array(str).optional(),
            files: z.number().optional(),
          })
          .passthrough(),
      })
      .passthrough()
      .nullable()
      .optional()
      .default(null),
    unpredictable: nstr,
  }),
);
export type ImagePolicy = z.output<typeof policyExtras>;

/** The daemon's references summary (image-references.ts referencesSummary) in one line. */
function referencesLine(r: NonNullable<ImagePolicy['references']>): string {
  const b = r.boot;
  const what =
    b.kind === 'kernel'
      ? `kernel ${b.kernel?.slice(0, 12)}…, initrd ${b.initrd?.slice(0, 12)}…, command line "${b.cmdline ?? ''}"`
      : `GRUB: ${(b.efiApps ?? []).join(', ')}, ${b.files ?? 0} files under /boot, command line "${b.cmdline ?? ''}"`;
  return `made ${r.madeAt.slice(0, 16).replace('T', ' ')} from the files: ${what}; firmware ${r.firmware.code}`;
}

/** The name an image is created with: the daemon's name, else the bare id (its newest version), else "<id>_<version>". */
export function imageRef(i: Loose<Image>, all: Loose<Image>[]): string {
  const name = extra(str, extrasOf(i).name);
  if (name) return name;
  const newest = all.find((x) => x.id === i.id);
  return newest === i ? i.id : `${i.id}_${i.version}`;
}

/** The image's policy: the daemon's view of it, else the document's policy object as an image build writes it. */
export function imagePolicy(i: Loose<Image>): ImagePolicy | null {
  const own = extrasOf(i);
  if ('policy' in own) return own.policy === null ? null : extra(policyExtras, own.policy);
  if (i.policy === undefined) return null;
  const built = extra(
    z.object({ golden: z.object({ sha256: z.record(z.string(), z.string()) }), record_only: z.array(z.number()).optional() }),
    i.policy,
  );
  if (built)
    return {
      golden: built.golden.sha256,
      recordOnly: built.record_only ?? [],
      firmwareChanged: null,
      goldenSizes: [],
      references: null,
      unpredictable: null,
    };
  return (
    extra(policyExtras, i.policy) ?? {
      recordOnly: [],
      golden: {},
      firmwareChanged: null,
      goldenSizes: [],
      references: null,
      unpredictable: null,
    }
  );
}

export function imageView(i: Loose<Image>, all: Loose<Image>[] = [i]): VmImage {
  const ext = extrasOf(i);
  const policy = imagePolicy(i);
  return {
    name: imageRef(i, all),
    kind: extra(str, ext.kind) ?? 'uki',
    createdAt: extra(str, ext.createdAt),
    sizeBytes: extra(z.number(), ext.sizeBytes),
    hasPolicy: policy !== null,
    goldenPcrs: policy ? (policy.goldenCount ?? Object.keys(policy.golden).length) : 0,
    firmwareChanged: policy?.firmwareChanged ?? null,
    goldenSizes: (policy?.goldenSizes ?? []).map((s) => ({ cpus: s.cpus, memoryMib: s.memoryMiB })),
    references: policy?.references ? referencesLine(policy.references) : null,
    unpredictable: policy?.unpredictable ?? null,
  };
}

/** The daemon's learn-golden answer (its own sizes in MiB, golden.ts's LearnedGolden) as the contract's. */
const daemonLearned = lazySchema(() => vmLearnedGolden.omit({ memoryMib: true }).extend({ memoryMiB: z.number().int() }).strict());
export function learnedView(answer: unknown): VmLearnedGolden {
  const { memoryMiB, ...rest } = parseAnswer('POST learn-golden', daemonLearned, answer);
  return { ...rest, memoryMib: memoryMiB };
}

// ---- attestation -------------------------------------------------------------------------------

const quoteExtras = lazySchema(() =>
  z.object({
    failed: nstr,
    pcrs: z.record(z.string(), z.string()).optional().default({}),
    mismatches: z
      .array(z.object({ pcr: z.union([z.string(), z.number()]), expected: str, got: str }))
      .optional()
      .default([]),
    events: eventCheck.nullable().optional().default(null),
  }),
);

/**
 * The PCR table per stage: the quoted value, what it must be and whether they match. For an image
 * with reference measurements that is the replay of the guest's event log (each event checked
 * against the references: the stage's `events`); else the image's golden value. PCRs 11 and 13
 * are computed by the verifier (never golden); record-only PCRs are shown, not compared; a PCR
 * without a golden value (learn mode) has match null. The document's Quote has no PCR values: a
 * cluster's manager gives verdicts only, and the table is then empty.
 */
export function attestationView(id: string, raw: Loose<Attestation>, policy: ImagePolicy | null): VmAttestation {
  const a = extrasOf(raw);
  const golden: Record<string, string> = { ...(policy?.golden ?? {}) };
  const table = extra(z.array(z.object({ pcr: z.union([z.string(), z.number()]), golden: nstr, replayed: nstr })), a.table) ?? [];
  for (const row of table) if (row.golden && golden[String(row.pcr)] === undefined) golden[String(row.pcr)] = row.golden;
  const replayed = new Map(table.filter((r) => r.replayed).map((r) => [String(r.pcr), r.replayed!]));
  const references = a.references === true;
  const recordOnly = new Set((policy?.recordOnly ?? []).map(String));
  const stages: VmAttestation['stages'] = [];
  for (const stage of ['initrd', 'ready'] as const) {
    const q = raw[stage];
    if (!q) continue;
    const s = extra(quoteExtras, a[stage]) ?? { failed: null, pcrs: {}, mismatches: [], events: null };
    const mismatched = new Map(s.mismatches.map((m) => [String(m.pcr), m]));
    const pcrs: PcrRow[] = Object.keys(s.pcrs)
      .sort((x, y) => Number(x) - Number(y))
      .map((k) => {
        const value = s.pcrs[k] ?? '';
        const g = golden[k] ?? mismatched.get(k)?.expected ?? null;
        let note: string | null = null;
        let match: boolean | null = null;
        if (k === '11' || k === '13') note = 'computed by the verifier (boot phase / user-data), not a golden value';
        else if (references) {
          const r = mismatched.get(k)?.expected ?? (s.events ? value : (replayed.get(k) ?? null));
          return {
            index: Number(k),
            value,
            golden: r,
            match: r === null ? null : !mismatched.has(k),
            note: r === null ? 'not replayed yet' : 'replayed from the event log',
          };
        } else if (recordOnly.has(k)) note = 'record only: differs per VM size, never compared';
        else if (g === null) note = 'no golden value yet (learn mode)';
        else match = mismatched.has(k) ? false : g.toLowerCase() === value.toLowerCase();
        return { index: Number(k), value, golden: g, match, note };
      });
    stages.push({ stage, verified: q.verified, message: q.message ?? '', at: q.at, failed: s.failed, pcrs, events: s.events });
  }
  return {
    id,
    required: raw.required,
    userDataReleased: raw.userDataReleased,
    akFingerprint: extra(str, a.akFingerprint),
    nonceIssuedAt: raw.nonceIssuedAt ?? null,
    policyKnown: policy !== null,
    stages,
  };
}
