/**
 * Reference measurements of a disk image that boots through GRUB under OVMF, read from the disk
 * itself (disk/): the EFI applications on the ESP (PCR 4), every file GRUB may read and measure
 * (PCR 9) and the default entry's kernel command line (PCR 8). A disk this cannot predict throws
 * Unpredictable saying why; its policy then says so and golden values are its fallback.
 */
import { createHash } from 'node:crypto';
import { Ext4Fs } from '../disk/ext4';
import { FatFs, type FsEntry } from '../disk/fat';
import { DiskError, openDisk } from '../disk/image-file';
import { ESP_GUID, partitionReader, partitions, type Partition } from '../disk/partitions';
import { authenticodeSha256, PeError } from './pe';
import type { GrubBoot } from './references';

export class Unpredictable extends Error {}

interface Fs {
  list(path: string): FsEntry[] | null;
  readFile(path: string): Buffer | null;
}

const MAX_FILES = 2000;
/** GRUB platform directories other than the one OVMF runs (x86_64-efi) hold modules it never reads. */
const OTHER_PLATFORM = /^(?!x86_64-efi$)[a-z0-9_]+-(pc|efi|coreboot|qemu|ieee1275|xen|multiboot|emu|uboot)$/;

function walk(fs: Fs, dir: string, out: { path: string; size: number }[]): void {
  for (const e of fs.list(dir) ?? []) {
    const path = `${dir === '/' ? '' : dir}/${e.name}`;
    if (e.dir) {
      if (!OTHER_PLATFORM.test(e.name)) walk(fs, path, out);
    } else if (e.size >= 0) {
      out.push({ path, size: e.size });
      if (out.length > MAX_FILES) throw new Unpredictable(`more than ${MAX_FILES} files under the boot directories`);
    }
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Splits a grub.cfg line into words as GRUB's parser does for plain words and quotes; null when it holds what GRUB would expand. */
export function grubWords(line: string): string[] | null {
  if (/[$`\\]/.test(line)) return null;
  const words: string[] = [];
  const re = /'([^']*)'|"([^"]*)"|(\S+)/g;
  for (let m; (m = re.exec(line));) {
    const w = m[1] ?? m[2] ?? m[3]!;
    if (/\s/.test(w)) return null;
    words.push(w);
  }
  return words;
}

/**
 * The `linux` line of grub.cfg's first menuentry, as GRUB logs it. That entry is the default unless
 * something (grubenv's next_entry or saved_entry, a key at the menu) chooses another, whose command
 * line then does not match: refused, not guessed.
 */
export function defaultCmdline(cfg: string): string {
  return defaultEntry(cfg).cmdline;
}

/** The default entry's kernel command (`linux`, `linuxefi`, or a variable) and its command line. */
export function defaultEntry(cfg: string): { command: string; cmdline: string } {
  const lines = cfg.split('\n');
  const start = lines.findIndex((l) => /^\s*menuentry\s/.test(l));
  if (start < 0) throw new Unpredictable('grub.cfg has no menuentry');
  for (let i = start + 1; i < lines.length && !/^\s*}/.test(lines[i]!); i++) {
    // `linux`, `linuxefi`, or a variable naming one of them (the bake's Debian base: linuxefi on UEFI)
    const m = /^\s*(linux(?:efi)?|\$\{?\w*linux\w*\}?)\s+(.*)$/.exec(lines[i]!);
    if (!m) continue;
    const words = grubWords(m[2]!.trim());
    if (!words || words.length === 0)
      throw new Unpredictable(`the default entry's kernel line expands variables or quotes spaces: "${m[2]!.trim()}"`);
    return { command: m[1]!, cmdline: words.join(' ') };
  }
  throw new Unpredictable('the first menuentry of grub.cfg has no linux line');
}

/** shim (not GRUB's own shim_lock verifier, which every Debian GRUB carries): it starts MokManager. */
function isShim(app: Buffer): boolean {
  return app.includes('MokManager') || app.includes(Buffer.from('MokManager', 'utf16le'));
}

/** Whether a GRUB core image carries the tpm module (its measuring hooks), which then measures from the first file it reads. */
function hasTpmModule(core: Buffer): boolean {
  return ['commands/efi/tpm.c', 'commands/tpm.c', 'grub_tpm_measure'].some((s) => core.includes(s));
}

/** References of a GRUB-booted disk image (raw or qcow2). Throws Unpredictable when the boot cannot be predicted. */
export function grubReferences(diskFile: string): GrubBoot {
  let disk;
  try {
    disk = openDisk(diskFile);
  } catch (e) {
    throw new Unpredictable(e instanceof DiskError ? e.message : `cannot read the disk: ${(e as Error).message}`);
  }
  try {
    let parts: Partition[];
    try {
      parts = partitions(disk);
    } catch (e) {
      throw new Unpredictable(`the partition table cannot be read: ${(e as Error).message}`);
    }
    if (!parts.length) throw new Unpredictable('the disk has no partition table');
    const esp = parts.find((p) => p.type === ESP_GUID || p.type === 'ef');
    if (!esp) throw new Unpredictable('the disk has no EFI system partition, so OVMF boots nothing from it that can be predicted');
    const files: Record<string, string> = {};
    const efiApps: GrubBoot['efi_apps'] = [];
    let espFs: FatFs;
    try {
      espFs = new FatFs(partitionReader(disk, esp));
    } catch (e) {
      throw new Unpredictable(`the EFI system partition is not a FAT file system: ${(e as Error).message}`);
    }
    const espFiles: { path: string; size: number }[] = [];
    walk(espFs, '/', espFiles);
    for (const f of espFiles) {
      const data = espFs.readFile(f.path)!;
      files[`${esp.index}:${f.path}`] = sha256(data);
      if (/\.efi$/i.test(f.path)) {
        try {
          efiApps.push({ path: `${esp.index}:${f.path}`, authenticode: authenticodeSha256(data) });
        } catch (e) {
          if (!(e instanceof PeError)) throw e;
        }
      }
    }
    const removable = espFs.readFile('/EFI/BOOT/BOOTX64.EFI');
    if (!removable)
      throw new Unpredictable('the EFI system partition has no /EFI/BOOT/BOOTX64.EFI, the path a VM with fresh firmware variables boots');
    if (isShim(removable))
      throw new Unpredictable('it boots through shim, which measures its MOK state into PCR 14; that is not predicted here');
    if (!hasTpmModule(removable)) {
      throw new Unpredictable(
        'its GRUB (/EFI/BOOT/BOOTX64.EFI) has no tpm module built in, so the kernel, initrd and command line it boots are not ' +
          'measured; reinstall GRUB with `grub-install --modules=tpm`',
      );
    }
    let cfg: string | null = null;
    for (const p of parts.filter((x) => x !== esp)) {
      let fs: Ext4Fs;
      try {
        fs = new Ext4Fs(partitionReader(disk, p));
      } catch {
        continue; // swap, a BIOS boot partition, another file system: GRUB reads nothing there
      }
      // /boot on the root file system, or a separate boot partition (grub/ at its top)
      const root = fs.list('/boot/grub') ? '/boot' : fs.list('/grub') ? '/' : null;
      if (!root) continue;
      const found: { path: string; size: number }[] = [];
      walk(fs, root, found);
      for (const f of found) {
        const data = fs.readFile(f.path);
        if (!data) continue;
        files[`${p.index}:${f.path}`] = sha256(data);
        if (/\/vmlinuz[^/]*$/.test(f.path)) {
          try {
            efiApps.push({ path: `${p.index}:${f.path}`, authenticode: authenticodeSha256(data) });
          } catch (e) {
            if (!(e instanceof PeError)) throw e;
          }
        }
      }
      cfg ??= fs.readFile(root === '/' ? '/grub/grub.cfg' : '/boot/grub/grub.cfg')?.toString('utf8') ?? null;
    }
    if (cfg === null) throw new Unpredictable('no ext2/3/4 partition holds /boot/grub/grub.cfg (another file system, or no GRUB)');
    const entry = defaultEntry(cfg);
    // Debian's and Ubuntu's GRUB (the ones with linuxefi) start Linux with their legacy loader when
    // Secure Boot is off: the kernel then gets no TPM event log, and the guest has none to send.
    const efiModules = Object.keys(files).filter((k) => /\/x86_64-efi\/linuxefi\.mod$/.test(k));
    if (entry.command === 'linux' && efiModules.length) {
      throw new Unpredictable(
        "its GRUB starts Linux with `linux`, which on UEFI without Secure Boot is GRUB's legacy loader: the kernel gets no TPM " +
          "event log to send with a quote; use `linuxefi` on UEFI (the bake's Debian base does)",
      );
    }
    return { kind: 'grub', efi_apps: efiApps, files, cmdlines: [entry.cmdline] };
  } catch (e) {
    if (e instanceof DiskError) throw new Unpredictable(`the disk cannot be read: ${e.message}`);
    throw e;
  } finally {
    disk.close();
  }
}
