/**
 * The vm-manager's REST answers, validated and turned into the app's contract views. The schemas
 * are lenient about fields the app does not use (a remote manager may send more), strict about the
 * ones it does: an answer without them is refused with a message naming the field.
 */
import { z } from 'zod';
import { AppError, describeZodError } from '../../../shared/contract/errors';
import type { PcrRow, VmAttestation, VmHost, VmImage, VmRecord } from '../../../shared/contract/vm';
import { VM_STATES } from '../../../shared/contract/vm';

const str = z.string();
const nstr = z.string().nullable().optional().transform((v) => v ?? null);
const nnum = z.number().nullable().optional().transform((v) => v ?? null);

const tool = z
  .object({ found: z.boolean(), version: nstr, error: nstr })
  .optional()
  .transform((v) => v ?? { found: false, version: null, error: 'not reported by the vm-manager' });

export const managerHost = z.object({
  hostname: str,
  kernel: str.optional().default(''),
  platformNote: nstr.optional().default(null),
  cpus: z.number(),
  memoryBytes: z.number(),
  qemu: tool,
  qemuImg: tool,
  swtpm: tool,
  tpm2Tools: tool,
  busybox: tool,
  ovmfCode: nstr,
  guestKernel: nstr,
  accelerator: z.object({
    chosen: nstr,
    reason: str,
    warning: nstr,
    probes: z.array(z.object({ accel: str, result: str, detail: str })).optional().default([]),
  }),
  ready: z.boolean(),
  missing: z.array(z.object({ what: str, install: str })),
});

const stageResult = z
  .object({
    verified: z.boolean(),
    message: str,
    at: nstr,
    failed: nstr,
    pcrs: z.record(z.string(), z.string()).optional().default({}),
    mismatches: z.array(z.object({ pcr: z.union([z.string(), z.number()]), expected: str, got: str })).optional().default([]),
  })
  .nullable()
  .optional()
  .transform((v) => v ?? null);

/** A VM's attestation as the manager reports it, inside its VM record and on its own route. */
const attestationState = z.object({
  required: z.boolean(),
  userDataReleased: z.boolean(),
  nonceIssuedAt: nstr,
  akFingerprint: nstr,
  initrd: stageResult,
  ready: stageResult,
});

export const managerVm = z.object({
  id: str,
  name: str,
  image: str,
  cpus: z.number(),
  memoryMiB: z.number(),
  diskGiB: z.number(),
  requireAttestation: z.boolean(),
  accel: nstr,
  state: z.enum(VM_STATES),
  createdAt: str,
  startedAt: nstr,
  bootedAt: nstr,
  readyAt: nstr,
  durations: z
    .object({ installSeconds: nnum, bootSeconds: nnum, readySeconds: nnum })
    .optional()
    .transform((v) => v ?? { installSeconds: null, bootSeconds: null, readySeconds: null }),
  lastError: nstr,
  attestation: attestationState,
  /** Host ports forwarded into the guest; absent from managers before SSH forwarding. */
  ports: z.object({ ssh: z.number().int().min(1).max(65535).nullable() }).optional(),
  /** absent from managers before host-made SSH keys */
  sshHostKey: z.object({ publicKey: z.string().regex(/^ssh-ed25519 [A-Za-z0-9+/]+=*$/) }).nullable().optional(),
  /** local manager only: where the console log and (since the interactive console) the serial socket are */
  paths: z.object({ console: str.optional(), serialSocket: nstr }).optional(),
});
export type ManagerVm = z.output<typeof managerVm>;

export const managerImage = z.object({
  name: str,
  kind: str,
  createdAt: nstr,
  sizeBytes: nnum,
  policy: z
    .object({
      recordOnly: z.array(z.number()).optional().default([]),
      golden: z.record(z.string(), z.string()).optional().default({}),
      goldenCount: z.number().optional(),
      firmwareChanged: nstr,
    })
    .nullable()
    .optional()
    .transform((v) => v ?? null),
});
export type ManagerImage = z.output<typeof managerImage>;

export const managerAttestation = attestationState.extend({
  id: str,
  image: str,
  table: z
    .array(z.object({ pcr: z.union([z.string(), z.number()]), golden: nstr, compared: z.boolean().optional() }))
    .optional()
    .default([]),
});

export const managerConsole = z.object({ id: str, console: z.string() });

/** Parses a manager answer; a wrong shape is `internal` with the field named. */
export function parseAnswer<S extends z.ZodType>(what: string, schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new AppError('internal', describeZodError(`the vm-manager's answer to ${what} is not what this app understands (is it a newer or other vm-manager?)`, r.error));
  }
  return r.data;
}

export function hostView(h: z.output<typeof managerHost>, endpoint: string, mode: 'local' | 'remote', managerError: string | null = null): VmHost {
  const tools = (
    [
      ['qemu-system-x86_64', h.qemu],
      ['qemu-img', h.qemuImg],
      ['swtpm', h.swtpm],
      ['tpm2-tools', h.tpm2Tools],
      ['busybox', h.busybox],
    ] as const
  ).map(([name, t]) => ({ name, found: t.found, version: t.version, error: t.error }));
  return {
    endpoint,
    mode,
    managerError,
    hostname: h.hostname,
    kernel: h.kernel,
    platformNote: h.platformNote,
    cpus: h.cpus,
    memoryBytes: h.memoryBytes,
    tools,
    ovmfCode: h.ovmfCode,
    guestKernel: h.guestKernel,
    accelerator: h.accelerator,
    ready: h.ready,
    missing: h.missing,
  };
}

export function vmView(v: ManagerVm): VmRecord {
  return {
    id: v.id,
    name: v.name,
    image: v.image,
    cpus: v.cpus,
    memoryMib: v.memoryMiB,
    diskGib: v.diskGiB,
    requireAttestation: v.requireAttestation,
    state: v.state,
    accel: v.accel,
    createdAt: v.createdAt,
    startedAt: v.startedAt,
    bootedAt: v.bootedAt,
    readyAt: v.readyAt,
    durations: v.durations,
    lastError: v.lastError,
    attestation: {
      required: v.attestation.required,
      userDataReleased: v.attestation.userDataReleased,
      initrdVerified: v.attestation.initrd ? v.attestation.initrd.verified : null,
      readyVerified: v.attestation.ready ? v.attestation.ready.verified : null,
    },
    sshPort: v.ports?.ssh ?? null,
    sshHostKey: v.sshHostKey?.publicKey ?? null,
  };
}

export function imageView(i: ManagerImage): VmImage {
  return {
    name: i.name,
    kind: i.kind,
    createdAt: i.createdAt,
    sizeBytes: i.sizeBytes,
    hasPolicy: i.policy !== null,
    goldenPcrs: i.policy ? (i.policy.goldenCount ?? Object.keys(i.policy.golden).length) : 0,
    firmwareChanged: i.policy?.firmwareChanged ?? null,
  };
}

/**
 * The PCR table per stage: the quoted value, the image's golden value and whether they match.
 * PCRs 11 and 13 are computed by the verifier (never golden); record-only PCRs are shown, not
 * compared; a PCR without a golden value (learn mode) has match null.
 */
export function attestationView(a: z.output<typeof managerAttestation>, image: ManagerImage | null): VmAttestation {
  const golden: Record<string, string> = { ...(image?.policy?.golden ?? {}) };
  for (const row of a.table) if (row.golden && golden[String(row.pcr)] === undefined) golden[String(row.pcr)] = row.golden;
  const recordOnly = new Set((image?.policy?.recordOnly ?? []).map(String));
  const stages: VmAttestation['stages'] = [];
  for (const stage of ['initrd', 'ready'] as const) {
    const s = a[stage];
    if (!s) continue;
    const mismatched = new Map(s.mismatches.map((m) => [String(m.pcr), m]));
    const pcrs: PcrRow[] = Object.keys(s.pcrs)
      .sort((x, y) => Number(x) - Number(y))
      .map((k) => {
        const value = s.pcrs[k] ?? '';
        const g = golden[k] ?? mismatched.get(k)?.expected ?? null;
        let note: string | null = null;
        let match: boolean | null = null;
        if (k === '11' || k === '13') note = 'computed by the verifier (boot phase / user-data), not a golden value';
        else if (recordOnly.has(k)) note = 'record only: differs per VM size, never compared';
        else if (g === null) note = 'no golden value yet (learn mode)';
        else match = mismatched.has(k) ? false : g.toLowerCase() === value.toLowerCase();
        return { index: Number(k), value, golden: g, match, note };
      });
    stages.push({ stage, verified: s.verified, message: s.message, at: s.at, failed: s.failed, pcrs });
  }
  return {
    id: a.id,
    required: a.required,
    userDataReleased: a.userDataReleased,
    akFingerprint: a.akFingerprint,
    nonceIssuedAt: a.nonceIssuedAt,
    policyKnown: image?.policy !== null && image !== null,
    stages,
  };
}
