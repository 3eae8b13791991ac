/**
 * The image store reads a disk's boot files itself to make its reference measurements
 * (main/vm-manager/disk/, attest/grub.ts). Real disks made by the real tools: sfdisk (GPT and MBR),
 * mkfs.ext4 / mkfs.ext2 -d (extents, block maps with indirect blocks, symlinks, a big directory),
 * mkfs.vfat -F 16 / -F 32 + mtools (long names), qemu-img convert to qcow2, plain and compressed;
 * every file read back equals its source, and grubReferences says what it can and cannot predict.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticodeSha256 } from '../../main/vm-manager/attest/pe';
import { defaultCmdline, grubReferences, Unpredictable } from '../../main/vm-manager/attest/grub';
import { Ext4Fs } from '../../main/vm-manager/disk/ext4';
import { FatFs } from '../../main/vm-manager/disk/fat';
import { openDisk } from '../../main/vm-manager/disk/image-file';
import { partitionReader, partitions } from '../../main/vm-manager/disk/partitions';
import { needs } from '../support/system';
import { cleanup, tempDir } from './attest/harness';

const skip = needs(['sfdisk', 'mkfs.ext4', 'mkfs.ext2', 'mkfs.vfat', 'mcopy', 'mmd', 'qemu-img']);
const kernelFile = readdirSync('/boot')
  .map((f) => join('/boot', f))
  .find((f) => /vmlinuz-/.test(f));
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const MiB = 1024 * 1024;

const GRUB_CFG = `set default="0"
if [ "\${next_entry}" ] ; then
   set default="\${next_entry}"
fi
menuentry 'Debian GNU/Linux' --class debian {
\tinsmod ext2
\tsearch --no-floppy --fs-uuid --set=root 1234
\techo\t'Loading Linux ...'
\t\${povdesk_linux}\t/boot/vmlinuz-6.1.0-9-amd64 root=UUID=1234 ro  console=tty0 console=ttyS0,115200
\t\${povdesk_initrd}\t/boot/initrd.img-6.1.0-9-amd64
}
menuentry 'Debian GNU/Linux, recovery' {
\tlinux\t/boot/vmlinuz-6.1.0-9-amd64 root=UUID=1234 ro single
}
`;

describe.skipIf(skip !== null || !kernelFile)("reading a disk image's boot files (GPT/MBR, FAT, ext2/4, raw/qcow2)", () => {
  let root: string;
  let tree: string;
  const files = new Map<string, Buffer>();
  let kernel: Buffer;
  let grubEfi: Buffer;

  /** A disk with an ESP (FAT `fat`) holding `efi` at /EFI/BOOT/BOOTX64.EFI and a root of `ext` made from `tree`. */
  function makeDisk(name: string, o: { table: 'gpt' | 'dos'; fat: '16' | '32'; ext: 'ext4' | 'ext2'; efi: Buffer | null }): string {
    const dir = join(root, name);
    mkdirSync(dir);
    const esp = join(dir, 'esp.img');
    sh('mkfs.vfat', ['-C', '-F', o.fat, '-n', 'ESP', esp, String(o.fat === '32' ? 40 * 1024 : 20 * 1024)]);
    sh('mmd', ['-i', esp, '::/EFI', '::/EFI/BOOT', '::/EFI/debian']);
    if (o.efi) {
      writeFileSync(join(dir, 'BOOTX64.EFI'), o.efi);
      sh('mcopy', ['-i', esp, join(dir, 'BOOTX64.EFI'), '::/EFI/BOOT/BOOTX64.EFI']);
    }
    writeFileSync(join(dir, 'long.cfg'), 'configfile (hd0,gpt2)/boot/grub/grub.cfg\n');
    sh('mcopy', ['-i', esp, join(dir, 'long.cfg'), '::/EFI/debian/a-rather-long-file-name.cfg']);
    const ext = join(dir, 'root.img');
    sh(`mkfs.${o.ext}`, ['-q', '-F', '-d', tree, '-L', 'root', ext, '48M']);
    const disk = join(dir, 'disk.raw');
    writeFileSync(disk, Buffer.alloc(0));
    sh('truncate', ['-s', `${1 + 40 + 48 + 1}M`, disk]);
    const layout =
      o.table === 'gpt'
        ? 'label: gpt\nstart=2048, size=81920, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B\nstart=83968, size=98304, ' +
          'type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n'
        : 'label: dos\nstart=2048, size=81920, type=ef\nstart=83968, size=98304, type=83\n';
    execFileSync('sfdisk', ['-q', disk], { input: layout });
    sh('dd', [`if=${esp}`, `of=${disk}`, 'bs=512', 'seek=2048', 'conv=notrunc', 'status=none']);
    sh('dd', [`if=${ext}`, `of=${disk}`, 'bs=512', 'seek=83968', 'conv=notrunc', 'status=none']);
    return disk;
  }

  beforeAll(() => {
    root = tempDir('disks');
    tree = join(root, 'tree');
    kernel = readFileSync(kernelFile!);
    // a GRUB core image stand-in: a real PE (the host's kernel) carrying the tpm module's marker
    grubEfi = Buffer.concat([kernel, Buffer.from('\0commands/efi/tpm.c\0')]);
    const put = (p: string, data: Buffer) => {
      mkdirSync(join(tree, p, '..'), { recursive: true });
      writeFileSync(join(tree, p), data);
      files.set(p, data);
    };
    put('/boot/vmlinuz-6.1.0-9-amd64', kernel);
    put('/boot/initrd.img-6.1.0-9-amd64', Buffer.concat(Array.from({ length: 40 }, (_, i) => Buffer.alloc(64 * 1024, i))));
    put('/boot/grub/grub.cfg', Buffer.from(GRUB_CFG));
    put('/boot/grub/grubenv', Buffer.from(`# GRUB Environment Block\n${'#'.repeat(1000)}`));
    for (let i = 0; i < 300; i++) put(`/boot/grub/x86_64-efi/mod${i}.mod`, Buffer.from(`module ${i}\n`.repeat(i + 1)));
    put('/boot/grub/i386-pc/boot.img', Buffer.from('a BIOS module the EFI GRUB never reads'));
    put('/etc/hostname', Buffer.from('disk-test\n'));
    symlinkSync('boot/vmlinuz-6.1.0-9-amd64', join(tree, 'vmlinuz'));
  });
  afterAll(() => cleanup(root));

  const variants = [
    { name: 'gpt-ext4-fat32', table: 'gpt', fat: '32', ext: 'ext4' },
    { name: 'mbr-ext2-fat16', table: 'dos', fat: '16', ext: 'ext2' },
  ] as const;
  for (const v of variants) {
    it(`${v.name}: every file reads back equal, raw, qcow2 and compressed qcow2`, () => {
      const raw = makeDisk(v.name, { ...v, efi: grubEfi });
      const qcow = raw.replace(/raw$/, 'qcow2');
      const packed = raw.replace(/raw$/, 'packed.qcow2');
      sh('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, qcow]);
      sh('qemu-img', ['convert', '-c', '-f', 'raw', '-O', 'qcow2', raw, packed]);
      for (const image of [raw, qcow, packed]) {
        const disk = openDisk(image);
        try {
          const parts = partitions(disk);
          expect(parts.map((p) => [p.index, p.scheme, p.start / MiB, p.size / MiB])).toEqual([
            [1, v.table === 'gpt' ? 'gpt' : 'msdos', 1, 40],
            [2, v.table === 'gpt' ? 'gpt' : 'msdos', 41, 48],
          ]);
          const fat = new FatFs(partitionReader(disk, parts[0]!));
          expect(fat.readFile('/efi/boot/bootx64.efi')!.equals(grubEfi)).toBe(true);
          expect(fat.list('/EFI/debian')!.map((e) => e.name)).toEqual(['a-rather-long-file-name.cfg']);
          expect(fat.readFile('/EFI/debian/a-rather-long-file-name.cfg')!.toString()).toBe('configfile (hd0,gpt2)/boot/grub/grub.cfg\n');
          const ext = new Ext4Fs(partitionReader(disk, parts[1]!));
          for (const [p, data] of files) expect(sha(ext.readFile(p)!), `${image} ${p}`).toBe(sha(data));
          expect(ext.readFile('/vmlinuz')!.equals(kernel)).toBe(true); // through the symlink
          expect(ext.list('/boot/grub/x86_64-efi')).toHaveLength(300);
          expect(ext.readFile('/boot/nothing')).toBeNull();
        } finally {
          disk.close();
        }
      }
    });
  }

  it("grubReferences: the ESP's applications and kernels (authenticode), every file GRUB may read, default entry's command line", () => {
    const disk = makeDisk('refs', { table: 'gpt', fat: '32', ext: 'ext4', efi: grubEfi });
    const r = grubReferences(disk);
    expect(r.cmdlines).toEqual(['/boot/vmlinuz-6.1.0-9-amd64 root=UUID=1234 ro console=tty0 console=ttyS0,115200']);
    expect(r.efi_apps).toEqual([
      { path: '1:/EFI/BOOT/BOOTX64.EFI', authenticode: authenticodeSha256(grubEfi) },
      { path: '2:/boot/vmlinuz-6.1.0-9-amd64', authenticode: authenticodeSha256(kernel) },
    ]);
    expect(r.files['2:/boot/grub/grub.cfg']).toBe(sha(Buffer.from(GRUB_CFG)));
    expect(r.files['2:/boot/initrd.img-6.1.0-9-amd64']).toBe(sha(files.get('/boot/initrd.img-6.1.0-9-amd64')!));
    expect(r.files['1:/EFI/debian/a-rather-long-file-name.cfg']).toMatch(/^[0-9a-f]{64}$/);
    expect(r.files['2:/boot/grub/i386-pc/boot.img']).toBeUndefined(); // another platform's modules
    expect(r.files['2:/etc/hostname']).toBeUndefined(); // only what GRUB reads: /boot and the ESP
    expect(Object.keys(r.files)).toHaveLength(2 + 304);
  });

  it("the default entry's command line as GRUB logs it: linux, linuxefi or a variable naming one; an expanded line is refused", () => {
    expect(defaultCmdline("menuentry 'a' {\n\tlinux\t/boot/v root=/dev/sda1  ro 'quiet'\n}\nmenuentry 'b' {\n\tlinux /boot/w\n}\n")).toBe(
      '/boot/v root=/dev/sda1 ro quiet',
    );
    expect(defaultCmdline("menuentry 'a' {\n  linuxefi /boot/v ro\n}\n")).toBe('/boot/v ro');
    expect(() => defaultCmdline("menuentry 'a' {\n\tlinux\t/boot/v root=$root ro\n}\n")).toThrow(/expands variables/);
    expect(() => defaultCmdline('set default=0\n')).toThrow(/no menuentry/);
  });

  it('grubReferences refuses what it cannot predict, saying why', () => {
    const why = (disk: string) => {
      try {
        grubReferences(disk);
        return 'predicted';
      } catch (e) {
        expect(e).toBeInstanceOf(Unpredictable);
        return (e as Error).message;
      }
    };
    expect(why(makeDisk('no-tpm', { table: 'gpt', fat: '32', ext: 'ext4', efi: kernel }))).toMatch(
      /has no tpm module built in.*grub-install --modules=tpm/,
    );
    expect(
      why(makeDisk('shim', { table: 'gpt', fat: '32', ext: 'ext4', efi: Buffer.concat([grubEfi, Buffer.from('MokManager', 'utf16le')]) })),
    ).toMatch(/boots through shim/);
    expect(why(makeDisk('no-app', { table: 'gpt', fat: '32', ext: 'ext4', efi: null }))).toMatch(/no \/EFI\/BOOT\/BOOTX64\.EFI/);
    // Debian's GRUB (it has linuxefi) with plain `linux`: its legacy loader hands the kernel no event log
    writeFileSync(join(tree, 'boot/grub/grub.cfg'), GRUB_CFG.replace('\t${povdesk_linux}\t', '\tlinux\t'));
    writeFileSync(join(tree, 'boot/grub/x86_64-efi/linuxefi.mod'), 'linuxefi');
    try {
      expect(why(makeDisk('legacy-linux', { table: 'gpt', fat: '32', ext: 'ext4', efi: grubEfi }))).toMatch(
        /starts Linux with `linux`.*no TPM event log.*use `linuxefi` on UEFI/,
      );
    } finally {
      writeFileSync(join(tree, 'boot/grub/grub.cfg'), GRUB_CFG);
      rmSync(join(tree, 'boot/grub/x86_64-efi/linuxefi.mod'));
    }
    const blank = join(root, 'blank.raw');
    sh('truncate', ['-s', '8M', blank]);
    expect(why(blank)).toBe('the disk has no partition table');
    expect(why(join(root, 'missing.qcow2'))).toMatch(/ENOENT|cannot read/);
  });
});
