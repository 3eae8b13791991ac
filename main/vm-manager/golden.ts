/**
 * Learning an image's golden PCR values (docs/attestation-golden.md, "Learn mode"), the fallback for an
 * image without reference measurements (its policy's `unpredictable` says why): one boot of a
 * throwaway VM in learn mode for that VM only, its verified ready-stage PCRs proposed as the
 * image's golden values for this host's firmware, the VM deleted. Saving is a separate, confirmed
 * step (saveGolden), except for `image build-test`, which records them when it must.
 */
import { firmwareDigest, hasGolden, recordGolden, recordGoldenForSize, type ImagePolicy, type VmSize } from './attest/index';
import { VmmError } from './errors';
import { findOvmf } from './host';
import { getImage, readPolicy, writePolicy } from './images';
import type { VmService } from './vms';
import { CREATE_VM_DEFAULTS } from '../vm-api/schemas';
import { GOLDEN_VM_SIZE } from '../../shared/golden-size';

export interface LearnedGolden {
  image: string;
  /** the size the learn boot ran at: the values hold for VMs of this size */
  cpus: number;
  memoryMiB: number;
  /** PCR → value the image's policy would hold (every compared PCR of either stage) */
  golden: Record<string, string>;
  /** every PCR the ready quote carried, for the table the user confirms */
  pcrs: Record<string, string>;
  firmware: { path: string; sha256: string } | null;
  seconds: number;
}

/** Firmware check for an image: null when it matches (or nothing is recorded), else what changed. */
export function firmwareChange(policy: ImagePolicy | null, ovmfCode: string | null): string | null {
  const refs = policy?.references?.firmware.code;
  if (refs && ovmfCode) {
    let now: string;
    try {
      now = firmwareDigest(ovmfCode);
    } catch {
      return `the firmware ${ovmfCode} cannot be read`;
    }
    return now === refs.sha256
      ? null
      : `the host's firmware changed since the reference measurements were made (${refs.path} ${refs.sha256.slice(0, 12)}… → ` +
          `${ovmfCode} ${now.slice(0, 12)}…): every attested VM of this image will fail; make them again from the files (no boot)`;
  }
  const rec = policy?.golden_firmware;
  if (!rec || !ovmfCode || !hasGolden(policy!)) return null;
  let now: string;
  try {
    now = firmwareDigest(ovmfCode);
  } catch {
    return `the firmware ${ovmfCode} the golden values were taken with cannot be read`;
  }
  return now === rec.sha256
    ? null
    : `the host's firmware changed since the golden values were learned (${rec.path} ${rec.sha256.slice(0, 12)}… → ` +
        `${ovmfCode} ${now.slice(0, 12)}…): every attested VM of this image will fail; learn them again`;
}

/**
 * One learn boot through `vms` (a running manager): create, wait for ready, read, delete. It runs
 * at `size` (by default GOLDEN_VM_SIZE, that of a create without a size): the measurements depend
 * on it (shared/golden-size.ts), so the values hold for VMs of that size only.
 */
export async function learnWith(
  vms: VmService,
  stateDir: string,
  imageName: string,
  size: VmSize = GOLDEN_VM_SIZE,
): Promise<LearnedGolden> {
  const image = getImage(stateDir, imageName);
  const policy = readPolicy(image.dir);
  if (!policy) throw new VmmError('not_found', `image ${image.name} has no policy.json; rebuild or re-import it`);
  if (policy.references) {
    throw new VmmError(
      'conflict',
      `image ${image.name} has reference measurements made from its files: its VMs attest at any size with no learn boot ` +
        '(golden values are only the fallback for an image whose boot cannot be predicted)',
    );
  }
  const started = Date.now();
  const vm = await vms.create({
    name: `learn-${image.name}`.slice(0, 50) + `-${Date.now().toString(36)}`,
    image: image.name,
    cpus: size.cpus,
    memoryMiB: size.memoryMiB,
    diskGiB: CREATE_VM_DEFAULTS.disk_gib,
    userData: null,
    requireAttestation: true,
    waitFor: 'ready',
    learnGolden: true,
  });
  try {
    const ready = await vms.waitFor(vm.id, 'ready', vms.timeouts.bootMs + vms.timeouts.startMs);
    const quote = ready.attestation.ready;
    if (!quote?.verified)
      throw new VmmError('vm_failed', `the learn boot of ${image.name} has no verified ready quote: ${quote?.message ?? 'none arrived'}`);
    const next = recordGolden(policy, quote.pcrs, { clear: true });
    const ovmf = findOvmf()?.code ?? null;
    return {
      image: image.name,
      cpus: size.cpus,
      memoryMiB: size.memoryMiB,
      golden: next.golden.sha256,
      pcrs: quote.pcrs,
      firmware: ovmf ? { path: ovmf, sha256: firmwareDigest(ovmf) } : null,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  } finally {
    await vms.delete(vm.id).catch(() => {});
  }
}

/**
 * Writes confirmed golden values of one VM size (and the firmware they hold for) into the image's
 * policy.json. Values of other sizes learned with another firmware are stale and are dropped.
 */
export function saveGolden(
  stateDir: string,
  imageName: string,
  golden: Record<string, string>,
  firmware: LearnedGolden['firmware'],
  size: VmSize = GOLDEN_VM_SIZE,
): ImagePolicy {
  const image = getImage(stateDir, imageName);
  const policy = readPolicy(image.dir);
  if (!policy) throw new VmmError('not_found', `image ${image.name} has no policy.json; rebuild or re-import it`);
  let base: ImagePolicy = policy;
  if (firmware && policy.golden_firmware && policy.golden_firmware.sha256 !== firmware.sha256) {
    const { golden_sizes: _stale, ...rest } = policy;
    base = { ...rest, golden: { sha256: {} } };
  }
  let next: ImagePolicy;
  try {
    next = recordGoldenForSize(base, size, golden);
  } catch (e) {
    throw new VmmError('invalid_request', `the golden values are not sha256 PCR values: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (firmware) next = { ...next, golden_firmware: firmware };
  writePolicy(image.dir, next);
  return next;
}
