/**
 * An image's reference measurements, made when the image is made (`image build-test`, import, and
 * so `bake.start`, which imports): the host firmware's parts and the image's own boot files,
 * read from the files with no boot. An image whose boot cannot be predicted gets `unpredictable`
 * (why) instead, and golden values learned by a boot are its fallback (docs/attestation-references.md).
 */
import { join } from 'node:path';
import { firmwareReferences, grubReferences, kernelBootReferences, Unpredictable, type References } from './attest/index';
import { findFirmware } from './finders';

export type ReferencesOrWhy = { references: References } | { unpredictable: string };

/** For a kernel image (vmlinuz + initrd booted by QEMU) or a disk image (its GRUB), in the image's directory. */
export function makeReferences(
  dir: string,
  image: { kind: 'kernel'; kernel: string; initrd: string; cmdline: string } | { kind: 'disk'; disk: string },
  ovmf: { code: string; vars: string } | null = findFirmware(),
): ReferencesOrWhy {
  if (!ovmf) return { unpredictable: 'this host has no UEFI firmware (OVMF) to predict: install it with `apt-get install ovmf`' };
  try {
    // the image's own boot first: a disk that cannot be predicted is said so without reading the firmware
    const boot = image.kind === 'kernel' ? kernelBootReferences(dir, image) : grubReferences(join(dir, image.disk));
    const firmware = firmwareReferences(ovmf);
    return { references: { made_at: new Date().toISOString(), firmware, boot } };
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { unpredictable: e instanceof Unpredictable ? why : `its measurements could not be computed: ${why}` };
  }
}

/** What the API, the CLI and the UI show of an image's references (the whole set is in policy.json). */
export function referencesSummary(r: References) {
  const b = r.boot;
  return {
    madeAt: r.made_at,
    firmware: {
      code: r.firmware.code.path,
      sha256: r.firmware.code.sha256,
      volumes: r.firmware.volumes.length,
      optionRoms: r.firmware.option_roms.map((o) => o.path),
      secureBoot: r.firmware.secure_boot.SecureBoot === '01',
    },
    boot:
      b.kind === 'kernel'
        ? { kind: b.kind, kernel: b.kernel.sha256, initrd: b.initrd.sha256, cmdline: b.cmdline }
        : { kind: b.kind, efiApps: b.efi_apps.map((a) => a.path), files: Object.keys(b.files).length, cmdline: b.cmdlines[0]! },
  };
}
export type ReferencesSummary = ReturnType<typeof referencesSummary>;
