/**
 * Reference measurements: what an image's boot will measure, computed from the files when the
 * image is made (no learn boot), stored in policy.json as `references`, and turned into one VM's
 * expectations (`expectationsFor`) for the event-log check (events.ts). docs/attestation-references.md,
 * "Reference measurements", says what each field holds and why.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { fileSha256, firmwareVolumes, optionRomDrivers, qemuRomFile, secureBootVariables, SECURE_BOOT_VARIABLES } from './firmware';
import { authenticodeSha256 } from './pe';

const hex32 = lazySchema(() => z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 digest: 64 lower-case hex characters'));
const fileRef = lazySchema(() => z.object({ path: z.string().min(1), sha256: hex32 }).strict());

/** The host firmware parts an image's references were made with. */
export const firmwareReferencesSchema = lazySchema(() =>
  z
    .object({
      code: fileRef,
      /** the volumes OVMF measures into PCR 0, in order; `pei`: digest not compared (docs/attestation-references.md) */
      volumes: z
        .array(z.object({ length: z.number().int().positive(), sha256: hex32, pei: z.boolean() }).strict())
        .min(1)
        .max(16),
      vars: fileRef,
      /** the Secure Boot variables OVMF measures into PCR 7: name → data (hex, "" when absent) */
      secure_boot: z.record(z.string(), z.string().regex(/^(?:[0-9a-f]{2})*$/)),
      /** option ROMs QEMU hands the guest's devices, with the authenticode digests of their EFI drivers (PCR 2) */
      option_roms: z.array(z.object({ path: z.string().min(1), drivers: z.array(hex32).max(8) }).strict()).max(8),
    })
    .strict(),
);

/** A kernel image booted by QEMU's -kernel/-initrd/-append on OVMF: the kernel's EFI stub measures. */
export const kernelBootSchema = lazySchema(() =>
  z
    .object({
      kind: z.literal('kernel'),
      kernel: z.object({ file: z.string().min(1), sha256: hex32, size: z.number().int().positive(), authenticode: hex32 }).strict(),
      initrd: z.object({ file: z.string().min(1), sha256: hex32, size: z.number().int().nonnegative() }).strict(),
      cmdline: z.string().max(4096),
      /** the digest of the EFI LoadOptions OVMF hands the kernel ("<cmdline> initrd=initrd", UCS-2) */
      load_options_sha256: hex32,
      /** how the kernel's setup header is patched before it is measured: QEMU 7.2's x86 Linux loader on q35 */
      loader: z.literal('qemu-x86-linux-q35'),
    })
    .strict(),
);

/** A disk that boots through GRUB with its tpm module (GRUB measures files into PCR 9, commands into PCR 8). */
export const grubBootSchema = lazySchema(() =>
  z
    .object({
      kind: z.literal('grub'),
      /** EFI applications the firmware may start from the ESP, and kernels GRUB may start as one (PCR 4) */
      efi_apps: z
        .array(z.object({ path: z.string().min(1), authenticode: hex32 }).strict())
        .min(1)
        .max(64),
      /** "<partition>:<path>" → sha256 of every file GRUB may read and measure (PCR 9) */
      files: z.record(z.string().min(1), hex32),
      /** the command line of the default entry, as GRUB logs it ("kernel_cmdline: …", PCR 8) */
      cmdlines: z.array(z.string().min(1).max(4096)).min(1).max(16),
    })
    .strict(),
);

export const referencesSchema = lazySchema(() =>
  z
    .object({
      made_at: z.string().min(1),
      firmware: firmwareReferencesSchema,
      boot: z.discriminatedUnion('kind', [kernelBootSchema, grubBootSchema]),
    })
    .strict(),
);
export type References = z.infer<typeof referencesSchema>;
export type FirmwareReferences = z.infer<typeof firmwareReferencesSchema>;
export type KernelBoot = z.infer<typeof kernelBootSchema>;
export type GrubBoot = z.infer<typeof grubBootSchema>;

/** The NIC every VM has (argv.ts: virtio-net-pci), whose option ROM OVMF loads. */
export const NIC_ROM = 'efi-virtio.rom';

/** The host firmware parts, read from their files. Throws (FirmwareError) when one cannot be predicted. */
export function firmwareReferences(ovmf: { code: string; vars: string }, roms: string[] = [NIC_ROM]): FirmwareReferences {
  const option_roms = roms.map((name) => {
    const path = qemuRomFile(name);
    if (!path) throw new Error(`QEMU's option ROM ${name} is not in its firmware path (\`qemu-system-x86_64 -L help\`): install ipxe-qemu`);
    return { path, drivers: optionRomDrivers(path) };
  });
  return {
    code: { path: ovmf.code, sha256: fileSha256(ovmf.code) },
    volumes: firmwareVolumes(ovmf.code),
    vars: { path: ovmf.vars, sha256: fileSha256(ovmf.vars) },
    secure_boot: secureBootVariables(ovmf.vars),
    option_roms,
  };
}

/** UCS-2 LoadOptions OVMF's QemuLoadImageLib builds for a -kernel boot: "<cmdline>[ initrd=initrd]\0". */
export function loadOptionsSha256(cmdline: string, hasInitrd: boolean): string {
  return createHash('sha256')
    .update(Buffer.from(`${cmdline}${hasInitrd ? ' initrd=initrd' : ''}\0`, 'utf16le'))
    .digest('hex');
}

/** References of a kernel image's own files (the firmware's come from firmwareReferences). */
export function kernelBootReferences(dir: string, files: { kernel: string; initrd: string; cmdline: string }): KernelBoot {
  const kernel = readFileSync(join(dir, files.kernel));
  const initrdFile = join(dir, files.initrd);
  return {
    kind: 'kernel',
    kernel: {
      file: files.kernel,
      sha256: createHash('sha256').update(kernel).digest('hex'),
      size: kernel.length,
      authenticode: authenticodeSha256(kernel),
    },
    initrd: { file: files.initrd, sha256: fileSha256(initrdFile), size: statSync(initrdFile).size },
    cmdline: files.cmdline,
    load_options_sha256: loadOptionsSha256(files.cmdline, true),
    loader: 'qemu-x86-linux-q35',
  };
}

/**
 * The kernel as QEMU 7.2 hands it to OVMF on q35 (hw/i386/x86.c x86_load_linux): the setup header
 * patched with the command-line address, loader type, heap end and the initrd's address and size.
 * The initrd goes at the top of the memory below 4 GiB minus the ACPI tables, so the measured
 * kernel moves with the VM's memory size (not its CPU count).
 */
export function kernelAsLoaded(kernel: Buffer, initrdSize: number, memoryMiB: number): Buffer {
  const h = Buffer.from(kernel);
  if (h.length < 0x268 || h.readUInt32LE(0x202) !== 0x53726448) throw new Error('the kernel has no Linux boot protocol header ("HdrS")');
  const protocol = h.readUInt16LE(0x206);
  if (protocol < 0x202 || (h[0x211]! & 0x01) === 0)
    throw new Error(`the kernel's boot protocol ${protocol.toString(16)} is older than QEMU's "high and recent" path`);
  const ram = memoryMiB * 1024 * 1024;
  const belowFourG = ram >= 0xb0000000 ? 0x80000000 : ram; // pc_q35.c: lowmem
  const acpiDataSize = 0x20000 + 0x8000;
  const canGoAbove4G = protocol >= 0x20c && (h.readUInt16LE(0x236) & 0x40) !== 0; // XLF_CAN_BE_LOADED_ABOVE_4G
  let initrdMax = canGoAbove4G ? 0xffffffff : protocol >= 0x203 ? h.readUInt32LE(0x22c) : 0x37ffffff;
  if (initrdMax >= belowFourG - acpiDataSize) initrdMax = belowFourG - acpiDataSize - 1;
  if (initrdSize >= initrdMax) throw new Error(`an initrd of ${initrdSize} bytes does not fit below ${initrdMax} with ${memoryMiB} MiB`);
  const realAddr = 0x10000;
  const cmdlineAddr = 0x20000;
  h.writeUInt32LE(cmdlineAddr, 0x228);
  h[0x210] = 0xb0; // type_of_loader: QEMU
  h[0x211] = h[0x211]! | 0x80; // CAN_USE_HEAP
  h.writeUInt16LE(cmdlineAddr - realAddr - 0x200, 0x224);
  h.writeUInt32LE(Math.floor((initrdMax - initrdSize) / 4096) * 4096, 0x218);
  h.writeUInt32LE(initrdSize, 0x21c);
  return h;
}

/** What one VM's boot must measure: references narrowed to the VM (its memory size moves the kernel). */
export interface Expectations {
  firmware: FirmwareReferences;
  /** PCR 4 EV_EFI_BOOT_SERVICES_APPLICATION digest → what it is */
  apps: Map<string, string>;
  /** apps one of which must have been started */
  requiredApps: string[];
  /** set when an expected app could not be computed (the image's kernel file changed): what was expected instead */
  unresolved?: string;
  /** PCR 9 Linux tagged events: tag id → expected digest and what it is */
  tags: Map<number, { sha256: string; what: string }>;
  grub: { files: Map<string, string>; cmdlines: Set<string> } | null;
}

export const LINUX_TAG_INITRD = 0x8f3b22ec;
export const LINUX_TAG_LOAD_OPTIONS = 0x8f3b22ed;

/** The file's bytes when it is exactly `size` bytes long, else null. */
function readWhole(file: string, size: number): Buffer | null {
  const buf = Buffer.alloc(size);
  const fd = openSync(file, 'r');
  try {
    return readSync(fd, buf, 0, size, 0) === size && readSync(fd, Buffer.alloc(1), 0, 1, size) === 0 ? buf : null;
  } finally {
    closeSync(fd);
  }
}

const asLoaded = new Map<string, string>();

/**
 * One VM's expectations. For a kernel image the kernel is read again (its sha256 must still be the
 * reference's: the references, not the file on disk, say what may boot) and patched for the VM's
 * memory as QEMU will; the digest is cached per kernel and memory size.
 */
export function expectationsFor(refs: References, imageDir: string, vm: { memoryMiB: number }): Expectations {
  const apps = new Map<string, string>();
  const tags = new Map<number, { sha256: string; what: string }>();
  const boot = refs.boot;
  if (boot.kind === 'kernel') {
    tags.set(LINUX_TAG_INITRD, { sha256: boot.initrd.sha256, what: `the initrd ${boot.initrd.file}` });
    tags.set(LINUX_TAG_LOAD_OPTIONS, { sha256: boot.load_options_sha256, what: `the command line "${boot.cmdline}"` });
    // cached per kernel file as it is now (a changed file is read again) and memory size
    const file = join(imageDir, boot.kernel.file);
    const st = statSync(file);
    const key = `${file}:${st.size}:${st.mtimeMs}:${st.ino}:${boot.kernel.sha256}:${boot.initrd.size}:${vm.memoryMiB}`;
    let digest = asLoaded.get(key);
    if (!digest) {
      // The as-loaded digest needs the reference kernel's bytes: a kernel file changed since the
      // references were made cannot give them, and every kernel then fails to match.
      const kernel = readWhole(file, boot.kernel.size);
      const now = kernel ? createHash('sha256').update(kernel).digest('hex') : null;
      if (now !== boot.kernel.sha256) {
        const unresolved =
          `the kernel ${boot.kernel.file} the references were made from (sha256 ${boot.kernel.sha256}); the file is ` +
          `now ${now ? `sha256 ${now}` : `not ${boot.kernel.size} bytes`}`;
        return { firmware: refs.firmware, apps, requiredApps: [], tags, grub: null, unresolved };
      }
      digest = authenticodeSha256(kernelAsLoaded(kernel!, boot.initrd.size, vm.memoryMiB));
      if (asLoaded.size >= 256) asLoaded.clear();
      asLoaded.set(key, digest);
    }
    apps.set(digest, `the kernel ${boot.kernel.file} as QEMU loads it at ${vm.memoryMiB} MiB`);
    return { firmware: refs.firmware, apps, requiredApps: [digest], tags, grub: null };
  }
  for (const a of boot.efi_apps) apps.set(a.authenticode, a.path);
  return {
    firmware: refs.firmware,
    apps,
    requiredApps: boot.efi_apps.filter((a) => /\.efi$/i.test(a.path)).map((a) => a.authenticode),
    tags,
    grub: { files: new Map(Object.entries(boot.files)), cmdlines: new Set(boot.cmdlines) },
  };
}

/** Names of the Secure Boot variables in the order OVMF measures them (for messages and tests). */
export const SECURE_BOOT_NAMES = SECURE_BOOT_VARIABLES.map((v) => v.name);
