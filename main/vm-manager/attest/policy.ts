import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, describeZodError } from '../../../shared/contract/errors';
import { isGoldenVmSize } from '../../../shared/golden-size';
import { referencesSchema } from './references';

export type Stage = 'initrd' | 'ready';

const hex32 = lazySchema(() => z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 digest: 64 lower-case hex characters'));
const pcrIndex = lazySchema(() => z.number().int().min(0).max(23));
const pcrKey = lazySchema(() => z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23 as a string'));
const sizeKeyPattern = /^([1-9][0-9]{0,2})x([1-9][0-9]{2,6})$/;

/** A VM size as policy.json names it in `golden_sizes`: "<cpus>x<memory MiB>", e.g. "2x1024". */
export interface VmSize {
  cpus: number;
  memoryMiB: number;
}
export const sizeKey = (s: VmSize) => `${s.cpus}x${s.memoryMiB}`;
const isDefaultSize = (s: VmSize) => isGoldenVmSize(s.cpus, s.memoryMiB);

/**
 * An image's attestation policy (policy.json beside the image). `pcrs` lists what each stage
 * quotes; `references` what the boot will measure (the verifier replays the guest's event log and
 * checks each event against them); without references (`unpredictable` says why), `golden.sha256`
 * holds the expected values learned by a boot; PCRs 11 and 13 are never golden (they are computed:
 * see expectedPcr11 / expectedPcr13); `record_only` PCRs are quoted and reported but never compared
 * (e.g. one that differs per VM). The PCRs move with the VM's size (shared/golden-size.ts), so
 * `golden` holds the values of the default size (GOLDEN_VM_SIZE) and `golden_sizes` those learned
 * at other sizes, keyed "<cpus>x<memory MiB>".
 */
export const imagePolicySchema = lazySchema(() =>
  z
    .object({
      image_id: z.string().min(1).max(200),
      image_version: z.string().min(1).max(100),
      pcrs: z
        .object({
          initrd: z.array(pcrIndex).min(1).max(24),
          ready: z.array(pcrIndex).min(1).max(24),
        })
        .strict(),
      golden: z.object({ sha256: z.record(pcrKey, hex32) }).strict(),
      golden_sizes: z.record(z.string(), z.object({ sha256: z.record(pcrKey, hex32) }).strict()).optional(),
      record_only: z.array(pcrIndex).max(24).optional(),
      golden_firmware: z
        .object({ path: z.string().min(1), sha256: hex32 })
        .strict()
        .optional(),
      /** what the boot will measure, computed from the files when the image was made (references.ts) */
      references: referencesSchema.optional(),
      /** why the image has no references (its boot cannot be predicted): golden values are its fallback */
      unpredictable: z.string().min(1).max(2000).optional(),
    })
    .strict()
    .superRefine((p, ctx) => {
      for (const stage of ['initrd', 'ready'] as const) {
        const list = p.pcrs[stage];
        if (new Set(list).size !== list.length) {
          ctx.addIssue({ code: 'custom', path: ['pcrs', stage], message: 'lists a PCR twice' });
        }
        if (!list.includes(11)) {
          ctx.addIssue({ code: 'custom', path: ['pcrs', stage], message: 'must include PCR 11 (the boot phase)' });
        }
      }
      const sets: [(string | number)[], Record<string, string>][] = [[['golden', 'sha256'], p.golden.sha256]];
      for (const [key, set] of Object.entries(p.golden_sizes ?? {})) {
        const parts = sizeKeyPattern.exec(key);
        if (!parts) {
          ctx.addIssue({ code: 'custom', path: ['golden_sizes', key], message: 'not a VM size "<cpus>x<memory MiB>", e.g. "2x1024"' });
          continue;
        }
        if (isDefaultSize({ cpus: Number(parts[1]), memoryMiB: Number(parts[2]) })) {
          ctx.addIssue({
            code: 'custom',
            path: ['golden_sizes', key],
            message: `${key} is the default size: its values belong in golden.sha256`,
          });
        }
        sets.push([['golden_sizes', key, 'sha256'], set.sha256]);
      }
      for (const [path, set] of sets) {
        for (const k of ['11', '13']) {
          if (k in set)
            ctx.addIssue({
              code: 'custom',
              path: [...path, k],
              message: `PCR ${k} is computed by the verifier, not a golden value; remove it`,
            });
        }
      }
    }),
);
export type ImagePolicy = z.infer<typeof imagePolicySchema>;

export const DEFAULT_STAGE_PCRS: Record<Stage, number[]> = {
  initrd: [0, 1, 2, 3, 4, 5, 6, 7, 11],
  ready: [0, 1, 2, 3, 4, 5, 6, 7, 11, 13],
};

/** A fresh policy with no golden values (learn mode fills them). */
export function newPolicy(imageId: string, imageVersion: string): ImagePolicy {
  return imagePolicySchema.parse({
    image_id: imageId,
    image_version: imageVersion,
    pcrs: { initrd: [...DEFAULT_STAGE_PCRS.initrd], ready: [...DEFAULT_STAGE_PCRS.ready] },
    golden: { sha256: {} },
  });
}

/** Reads and validates policy.json. Throws AppError not_found / invalid_request with the file named. */
export function loadPolicy(file: string): ImagePolicy {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new AppError('not_found', `no attestation policy at ${file}; build the image again or run "image golden" to create one`);
    }
    throw new AppError('unavailable', `cannot read attestation policy ${file}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new AppError('invalid_request', `attestation policy ${file} is not JSON (${(e as Error).message}); fix or delete it`);
  }
  const parsed = imagePolicySchema.safeParse(json);
  if (!parsed.success) {
    throw new AppError('invalid_request', describeZodError(`attestation policy ${file} is invalid`, parsed.error));
  }
  return parsed.data;
}

/** Validates then writes policy.json atomically (temp file in the same dir, fsync, rename). */
export function savePolicy(file: string, policy: ImagePolicy): void {
  const parsed = imagePolicySchema.safeParse(policy);
  if (!parsed.success) {
    throw new AppError('invalid_request', describeZodError(`refusing to write an invalid attestation policy to ${file}`, parsed.error));
  }
  const tmp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    writeSync(fd, JSON.stringify(parsed.data, null, 2) + '\n');
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  try {
    const dfd = openSync(dirname(file), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Directory fsync is best effort (not supported on every platform).
  }
}

/** PCRs compared against golden values at a stage: quoted ones minus 11, 13 and record_only. */
export function goldenPcrs(policy: ImagePolicy, stage: Stage): number[] {
  const skip = new Set([11, 13, ...(policy.record_only ?? [])]);
  return policy.pcrs[stage].filter((p) => !skip.has(p));
}

/**
 * Copies a verified quote's PCR values into golden.sha256 (for `image golden --from-vm`). PCRs 11
 * and 13 and record_only are left out; `clear` drops golden values for PCRs no stage compares.
 */
export function recordGolden(policy: ImagePolicy, verdictPcrs: Record<string, string>, opts: { clear?: boolean } = {}): ImagePolicy {
  const compared = new Set([...goldenPcrs(policy, 'initrd'), ...goldenPcrs(policy, 'ready')]);
  const golden: Record<string, string> = {};
  if (!opts.clear) {
    for (const [k, v] of Object.entries(policy.golden.sha256)) if (compared.has(Number(k))) golden[k] = v;
  }
  for (const [k, v] of Object.entries(verdictPcrs)) {
    if (compared.has(Number(k))) golden[k] = hex32.parse(v.toLowerCase());
  }
  const sorted = Object.fromEntries(Object.entries(golden).sort((a, b) => Number(a[0]) - Number(b[0])));
  return imagePolicySchema.parse({ ...policy, golden: { sha256: sorted } });
}

/**
 * The golden values a VM of this size is compared against: those learned at its size when there
 * are any, else the default size's (which then mismatch on the PCRs the size moves). `atSize` says
 * whether values were learned at this very size.
 */
export function goldenForSize(policy: ImagePolicy, size: VmSize): { sha256: Record<string, string>; atSize: boolean } {
  if (isDefaultSize(size)) return { sha256: policy.golden.sha256, atSize: Object.keys(policy.golden.sha256).length > 0 };
  const learned = policy.golden_sizes?.[sizeKey(size)];
  return learned ? { sha256: learned.sha256, atSize: true } : { sha256: policy.golden.sha256, atSize: false };
}

/** The sizes other than the default one that have golden values, in key order. */
export function learnedSizes(policy: ImagePolicy): VmSize[] {
  return Object.keys(policy.golden_sizes ?? {})
    .sort()
    .map((k) => {
      const [, cpus, mib] = sizeKeyPattern.exec(k)!;
      return { cpus: Number(cpus), memoryMiB: Number(mib) };
    });
}

/** Whether any size has golden values. */
export const hasGolden = (policy: ImagePolicy) =>
  Object.keys(policy.golden.sha256).length > 0 || Object.keys(policy.golden_sizes ?? {}).length > 0;

/**
 * A verified quote's PCR values as the golden values of one size (replacing that size's values;
 * the default size's go to `golden`, any other to `golden_sizes`). PCRs 11 and 13 and record_only
 * are left out, as in recordGolden.
 */
export function recordGoldenForSize(policy: ImagePolicy, size: VmSize, verdictPcrs: Record<string, string>): ImagePolicy {
  const values = recordGolden(policy, verdictPcrs, { clear: true }).golden;
  if (isDefaultSize(size)) return imagePolicySchema.parse({ ...policy, golden: values });
  return imagePolicySchema.parse({ ...policy, golden_sizes: { ...policy.golden_sizes, [sizeKey(size)]: values } });
}

const ZERO = Buffer.alloc(32);
function extend(pcr: Buffer, digest: Buffer): Buffer {
  return createHash('sha256').update(pcr).update(digest).digest();
}
function sha256(data: string | Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** The phase words guest-quote.sh extends into PCR 11, in order, per stage (like systemd-pcrphase). */
export const PHASE_PATH: Record<Stage, string[]> = {
  initrd: ['enter-initrd'],
  ready: ['enter-initrd', 'leave-initrd', 'sysinit', 'ready'],
};

/** PCR 11 after the stage's phase words: zero, then extend(sha256(word)) per word. */
export function expectedPcr11(stage: Stage): string {
  let pcr: Buffer = ZERO;
  for (const w of PHASE_PATH[stage]) pcr = extend(pcr, sha256(w));
  return pcr.toString('hex');
}

/** PCR 13 at the ready stage: extend(zero, sha256(user-data)), or zero when the VM has none (or empty). */
export function expectedPcr13(userData: string | Buffer | null): string {
  return (userData === null || userData.length === 0 ? ZERO : extend(ZERO, sha256(userData))).toString('hex');
}

/** sha256 of a firmware file, for golden_firmware. */
export function firmwareDigest(path: string): string {
  return sha256(readFileSync(path)).toString('hex');
}
