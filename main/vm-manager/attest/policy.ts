import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError, describeZodError } from '../../../shared/contract/errors';

export type Stage = 'initrd' | 'ready';

const hex32 = lazySchema(() => z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 digest: 64 lower-case hex characters'));
const pcrIndex = lazySchema(() => z.number().int().min(0).max(23));
const pcrKey = lazySchema(() => z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23 as a string'));

/**
 * An image's attestation policy (policy.json beside the image). `pcrs` lists what each stage
 * quotes; `golden.sha256` the expected values; PCRs 11 and 13 are never golden (they are computed:
 * see expectedPcr11 / expectedPcr13); `record_only` PCRs are quoted and reported but never compared
 * (e.g. one that differs per VM).
 */
export const imagePolicySchema = lazySchema(() => z
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
    record_only: z.array(pcrIndex).max(24).optional(),
    golden_firmware: z
      .object({ path: z.string().min(1), sha256: hex32 })
      .strict()
      .optional(),
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
    for (const k of ['11', '13']) {
      if (k in p.golden.sha256) {
        ctx.addIssue({ code: 'custom', path: ['golden', 'sha256', k], message: `PCR ${k} is computed by the verifier, not a golden value; remove it` });
      }
    }
  }));
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
export function recordGolden(
  policy: ImagePolicy,
  verdictPcrs: Record<string, string>,
  opts: { clear?: boolean } = {},
): ImagePolicy {
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
