/**
 * The image store under <state>/images/<name>/: image.json (what it is and how it boots),
 * policy.json (reference measurements, or golden PCR values), and the boot files (vmlinuz +
 * initrd.img, or base.qcow2). Images come in two ways: the test image built from the host's kernel
 * (test-image.ts) and a user's disk imported (image-import.ts).
 */
import { existsSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { VmmError } from './errors';
import { imagePolicySchema, loadPolicy, savePolicy, type ImagePolicy } from './attest/index';
import { makeReferences } from './image-references';

/** The test image's name (test-image.ts builds it): what a create that names no image boots. */
export const TEST_IMAGE = 'povdesk-test';
/**
 * PCRs quoted per stage. PCR 9 is added to the usual 0-7: with OVMF direct kernel boot the kernel's
 * EFI stub measures the initrd and the command line into PCR 9 (docs/vm-manager-guests.md has the proof).
 * PCRs 1 and 5 (SMBIOS/CPU/memory, boot attempts) differ with a VM's size: quoted, never compared.
 */
export const STAGE_PCRS = { initrd: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11], ready: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13] };
export const RECORD_ONLY = [1, 5];
/** For imported disks: the usual set plus GRUB's PCRs 8 (commands, kernel command line) and 9 (files it read). */
export const DISK_STAGE_PCRS = { initrd: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11], ready: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13] };

export interface ImageInfo {
  name: string;
  kind: 'kernel' | 'disk';
  createdAt: string;
  /** kernel images */
  kernel?: string;
  initrd?: string;
  cmdline?: string;
  /** disk images */
  disk?: string;
  sourceFormat?: string;
  virtualSizeBytes?: number;
  sizeBytes: number;
  /** the initrd's (kernel images) or the base disk's sha256 */
  sha256: string;
  kernelSha256?: string;
}

export type Policy = ImagePolicy;

export function imagesDir(stateDir: string): string {
  return join(stateDir, 'images');
}

export function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
  renameSync(tmp, file);
}

/** The image's validated policy, or null when it has none. A broken policy.json throws with the file named. */
export function readPolicy(imageDir: string): Policy | null {
  const p = join(imageDir, 'policy.json');
  if (!existsSync(p)) return null;
  return loadPolicy(p);
}

export function writePolicy(imageDir: string, policy: Policy): void {
  savePolicy(join(imageDir, 'policy.json'), policy);
}

/**
 * Makes an image's reference measurements again from its files (no boot), e.g. after the host's
 * firmware changed; the policy keeps everything else. Returns the saved policy.
 */
export function remakeReferences(stateDir: string, name: string): Policy {
  const img = getImage(stateDir, name);
  const policy = readPolicy(img.dir);
  if (!policy) throw new VmmError('not_found', `image ${name} has no policy.json; rebuild or re-import it`);
  const refs =
    img.kind === 'kernel'
      ? makeReferences(img.dir, {
          kind: 'kernel',
          kernel: img.kernel ?? 'vmlinuz',
          initrd: img.initrd ?? 'initrd.img',
          cmdline: img.cmdline ?? '',
        })
      : makeReferences(img.dir, { kind: 'disk', disk: img.disk ?? 'base.qcow2' });
  const { references: _old, unpredictable: _why, ...rest } = policy;
  const next = imagePolicySchema.parse({ ...rest, ...refs });
  writePolicy(img.dir, next);
  return next;
}

export function readImageMeta(dir: string): ImageInfo | null {
  try {
    return JSON.parse(readFileSync(join(dir, 'image.json'), 'utf8')) as ImageInfo;
  } catch {
    return null;
  }
}

/** An image's name: a DNS label. */
export const IMAGE_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function listImages(stateDir: string): (ImageInfo & { dir: string; policy: Policy | null })[] {
  const root = imagesDir(stateDir);
  if (!existsSync(root)) return [];
  const out: (ImageInfo & { dir: string; policy: Policy | null })[] = [];
  for (const n of readdirSync(root).sort()) {
    const dir = join(root, n);
    const metaFile = join(dir, 'image.json');
    if (!IMAGE_NAME_RE.test(n) || !existsSync(metaFile)) continue;
    try {
      let policy: Policy | null = null;
      try {
        policy = readPolicy(dir);
      } catch {
        policy = null; // reported as "no valid policy"; verification refuses until it is fixed
      }
      out.push({ ...(JSON.parse(readFileSync(metaFile, 'utf8')) as ImageInfo), dir, policy });
    } catch {
      // a half-written image is not listed
    }
  }
  return out;
}

export function getImage(stateDir: string, name: string) {
  if (!IMAGE_NAME_RE.test(name))
    throw new VmmError('invalid_request', `image "${name}" is not a valid image name (lowercase letters, digits and -)`);
  const img = listImages(stateDir).find((i) => i.name === name);
  if (!img)
    throw new VmmError(
      'not_found',
      `no image "${name}": build one with \`povdesk vm-manager image build-test\` or import one with \`image import <file>\``,
    );
  return img;
}

/** Removes an image's directory: renamed aside first, so a crash never leaves half an image listed. */
export function deleteImage(stateDir: string, name: string): void {
  const dir = getImage(stateDir, name).dir;
  const aside = `${dir}.deleting-${process.pid}`;
  renameSync(dir, aside);
  rmSync(aside, { recursive: true, force: true });
}

/** True when `p` resolves inside `root` (no .. escape, no symlink escape for existing parts). */
export function insideDir(root: string, p: string): boolean {
  const r = resolve(root) + sep;
  const abs = resolve(root, p);
  if (!(abs + sep).startsWith(r)) return false;
  try {
    return (realpathSync(abs) + sep).startsWith(realpathSync(root) + sep);
  } catch {
    return true;
  }
}
