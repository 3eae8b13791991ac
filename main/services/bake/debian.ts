/**
 * `{"debian": "bookworm"}`: a minimal bootable Debian built from Debian's packages when the SE has
 * no image. mmdebstrap makes the root file system (from the host's apt sources), guestfish lays it
 * on a GPT disk inside libguestfs's appliance (the host kernel here cannot mount vfat) and installs
 * GRUB twice — BIOS (core.img in a BIOS boot partition) for Skytap's VMware hardware, and UEFI
 * (the removable path on an ESP) for the local vm-manager's OVMF — so the same disk boots on both.
 *
 * The result depends only on its inputs (package list, hooks, layout, the host's apt Release
 * files), so it is cached under `<cacheDir>/debian-<codename>-<key>/base.qcow2` and reused.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fishWord, run, runGuestfs } from './tools';

/** The generic kernel, not -cloud: Skytap's VMware disks sit on LSI Logic SCSI, which the cloud kernel lacks. */
export const DEBIAN_PACKAGES = [
  'systemd-sysv',
  'linux-image-amd64',
  'initramfs-tools',
  'udev',
  'dbus',
  'iproute2',
  'curl',
  'ca-certificates',
  'grub-pc-bin',
  'grub-efi-amd64-bin',
  'grub2-common',
  'sudo',
  'less',
];

export const DEBIAN_DISK_GIB = 4;

/**
 * Runs in mmdebstrap's customize phase with the root directory as $1: automatic network on any
 * NIC name (virtio here, vmxnet3/e1000 on Skytap), GRUB on the serial line too (gfxterm hangs a
 * headless VM), fstab by label, a host name.
 */
export const CUSTOMIZE_HOOK =
  `set -e
R="$1"
mkdir -p "$R/etc/systemd/network" "$R/etc/default/grub.d"
printf '[Match]\\nName=en* eth*\\n\\n[Network]\\nDHCP=yes\\n' > "$R/etc/systemd/network/80-dhcp.network"
printf '%s\\n' 'GRUB_TIMEOUT=1' 'GRUB_TERMINAL="console serial"' \\
  'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"' \\
  'GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200"' > "$R/etc/default/grub.d/50-povdesk.cfg"
printf '%s\\n' 'LABEL=povroot / ext4 errors=remount-ro 0 1' 'LABEL=ESP /boot/efi vfat umask=0077 0 2' > "$R/etc/fstab"
echo povdesk-template > "$R/etc/hostname"
chroot "$R" systemctl enable systemd-networkd
# UEFI boots Linux through its EFI stub (GRUB's linuxefi): the stub hands the firmware's TPM event
# log to the kernel, and the guest sends it with its quotes (docs/attestation-references.md). BIOS keeps linux.
printf '%s\\n' '#!/bin/sh' 'cat <<"EOF"' 'if [ "\${grub_platform}" = efi ]; then set povdesk_linux=linuxefi; set ` +
  `povdesk_initrd=initrdefi; else set povdesk_linux=linux; set povdesk_initrd=initrd; fi' 'export povdesk_linux povdesk_initrd' ` +
  `'EOF' > "$R/etc/grub.d/05_povdesk_linuxefi"
chmod 755 "$R/etc/grub.d/05_povdesk_linuxefi"
sed -i 's/^\\tlinux\\t/\\t\\\\\${povdesk_linux}\\t/; s/^\\tinitrd\\t/\\t\\\\\${povdesk_initrd}\\t/' "$R/etc/grub.d/10_linux"
grep -q 'povdesk_linux' "$R/etc/grub.d/10_linux"
`;

/**
 * GRUB for BIOS and UEFI, run in the mounted guest. Device names in guestfish's own commands are
 * translated to the appliance kernel's, but not inside `sh`: there /dev/sda is whichever disk the
 * kernel named first, and it probes the disks asynchronously, so now and then that is libguestfs's
 * own appliance disk (ext2, no partition table; the bake then failed with "File system `ext2'
 * doesn't support embedding … cross-disk install"). The BIOS install goes to the disk that holds
 * /boot, as grub-probe sees it.
 */
export const BOOTLOADER_LINES = [
  'sh "disk=$(grub-probe --target=disk /boot) && grub-install --target=i386-pc $disk"',
  'sh "grub-install --target=x86_64-efi --efi-directory=/boot/efi --removable --no-nvram --no-uefi-secure-boot --modules=tpm"',
  'sh "update-grub"',
];

/** 1 MiB BIOS boot, 128 MiB ESP, the rest ext4 (sectors of 512 bytes). */
export function layoutScript(disk: string, tar: string, gib: number): string {
  return `disk-create ${fishWord(disk)} qcow2 ${gib * 1024 ** 3} preallocation:off
add ${fishWord(disk)} format:qcow2
run
part-init /dev/sda gpt
part-add /dev/sda p 2048 4095
part-add /dev/sda p 4096 266239
part-add /dev/sda p 266240 -34
part-set-gpt-type /dev/sda 1 21686148-6449-6E6F-744E-656564454649
part-set-gpt-type /dev/sda 2 C12A7328-F81F-11D2-BA4B-00A0C93EC93B
mkfs vfat /dev/sda2 label:ESP
mkfs ext4 /dev/sda3 label:povroot
mount /dev/sda3 /
tar-in ${fishWord(tar)} / xattrs:true acls:true
mkdir-p /boot/efi
mount /dev/sda2 /boot/efi
${BOOTLOADER_LINES.join('\n')}
`;
}

/** What the base depends on: our recipe and the host's apt Release files (the package versions). */
export function debianKey(codename: string): string {
  const h = createHash('sha256');
  h.update(`v1 ${codename} ${DEBIAN_PACKAGES.join(',')} ${DEBIAN_DISK_GIB}\n${CUSTOMIZE_HOOK}\n${layoutScript('D', 'T', DEBIAN_DISK_GIB)}`);
  const lists = '/var/lib/apt/lists';
  if (existsSync(lists)) {
    for (const f of readdirSync(lists).sort()) if (/Release$/.test(f)) h.update(f).update(readFileSync(join(lists, f)));
  }
  return h.digest('hex').slice(0, 16);
}

export interface DebianBuild {
  disk: string;
  cached: boolean;
  key: string;
}

/** The cached base disk for `codename`, built first when missing (the cache entry appears whole or not at all). */
export async function debianBase(o: {
  codename: 'bookworm';
  cacheDir: string;
  workDir: string;
  signal?: AbortSignal;
  log: (l: string) => void;
  progress?: (what: string) => void;
}): Promise<DebianBuild> {
  const key = debianKey(o.codename);
  const dir = join(o.cacheDir, `debian-${o.codename}-${key}`);
  const disk = join(dir, 'base.qcow2');
  if (existsSync(disk)) return { disk, cached: true, key };
  const tmp = join(o.workDir, 'debian');
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const hook = join(tmp, 'hook.sh');
  writeFileSync(hook, CUSTOMIZE_HOOK, { mode: 0o755 });
  const tar = join(tmp, 'rootfs.tar');
  o.progress?.('mmdebstrap: root file system from Debian packages');
  await run(
    'mmdebstrap',
    ['--variant=minbase', `--include=${DEBIAN_PACKAGES.join(',')}`, `--customize-hook=sh ${hook} "$1"`, o.codename, tar],
    {
      signal: o.signal,
      onLine: o.log,
      what: 'mmdebstrap',
      hint: 'it needs the Debian package mirror in /etc/apt/sources.list and root (or unshare) rights',
    },
  );
  o.progress?.('guestfish: GPT disk, ESP, BIOS + UEFI GRUB');
  const out = join(tmp, 'base.qcow2');
  await runGuestfs('guestfish', ['-x'], {
    signal: o.signal,
    input: layoutScript(out, tar, DEBIAN_DISK_GIB),
    onLine: o.log,
    what: 'guestfish (disk layout)',
  });
  rmSync(tar, { force: true });
  mkdirSync(o.cacheDir, { recursive: true });
  const staged = `${dir}.tmp-${process.pid}`;
  rmSync(staged, { recursive: true, force: true });
  mkdirSync(staged, { recursive: true });
  renameSync(out, join(staged, 'base.qcow2'));
  writeFileSync(join(staged, 'inputs.txt'), `${key}\n${DEBIAN_PACKAGES.join('\n')}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staged, dir);
  rmSync(tmp, { recursive: true, force: true });
  return { disk, cached: false, key };
}
