/**
 * The test image: the host's cloud kernel plus an initramfs built here (busybox, tpm2-tools,
 * dropbear, the virtio modules, guest/init.sh and the attestation agent), deterministic for equal
 * inputs, so it builds in seconds offline and its boot can be predicted (its reference measurements).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { vmAsset } from './assets';
import { cpioDir, cpioFile, cpioLink, writeCpio, type CpioEntry } from './cpio';
import { VmmError } from './errors';
import { GUEST_QUOTE_SCRIPT, firmwareDigest, imagePolicySchema, savePolicy } from './attest/index';
import { makeReferences } from './image-references';
import {
  imagesDir,
  readImageMeta,
  readPolicy,
  RECORD_ONLY,
  STAGE_PCRS,
  TEST_IMAGE,
  writeJsonAtomic,
  type ImageInfo,
  type Policy,
} from './images';

/** Load order measured on the cloud kernel: a wrong order fails with "Unknown symbol". */
export const GUEST_MODULES = [
  'virtio_ring',
  'virtio',
  'virtio_pci_modern_dev',
  'virtio_pci_legacy_dev',
  'virtio_pci',
  'virtio_blk',
  'failover',
  'net_failover',
  'virtio_net',
  'evdev',
  'button',
];
export const TEST_CMDLINE = 'console=ttyS0,115200 rdinit=/init panic=-1 quiet loglevel=4';

/** sha256 of a file read in 1 MiB chunks (a disk image may be far over the 2 GiB a Buffer holds). */
function sha256File(file: string): string {
  const h = createHash('sha256');
  const buf = Buffer.alloc(1024 * 1024);
  const fd = openSync(file, 'r');
  try {
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

export function findKernel(): { kernel: string; version: string } {
  const boot = existsSync('/boot') ? readdirSync('/boot') : [];
  const cands = boot.filter((f) => /^vmlinuz-.*-cloud-amd64$/.test(f)).sort();
  const pick =
    cands[cands.length - 1] ??
    boot
      .filter((f) => f.startsWith('vmlinuz-'))
      .sort()
      .pop();
  if (!pick) throw new VmmError('unavailable', 'no guest kernel in /boot: install it with `apt-get install linux-image-cloud-amd64`');
  return { kernel: join('/boot', pick), version: pick.slice('vmlinuz-'.length) };
}

function libsOf(bin: string): string[] {
  const out = execFileSync('ldd', [bin], { encoding: 'utf8' });
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m?.[1]) libs.push(m[1]);
  }
  return libs;
}

/** Adds a host file at the same path (following symlinks for the content, keeping the link). */
function addHostFile(out: Map<string, CpioEntry>, path: string, perm = 0o755): void {
  const rel = path.replace(/^\/+/, '');
  if (out.has(rel)) return;
  const st = lstatSync(path);
  if (st.isSymbolicLink()) {
    const target = readlinkSync(path);
    out.set(rel, cpioLink(rel, target));
    addHostFile(out, resolve(dirname(path), target), perm);
    return;
  }
  out.set(rel, cpioFile(rel, readFileSync(path), perm));
}

function withParents(entries: Map<string, CpioEntry>): CpioEntry[] {
  const dirs = new Set<string>();
  for (const p of entries.keys()) {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  for (const d of ['dev', 'proc', 'sys', 'run', 'tmp', 'etc/povdesk', 'lib/modules']) {
    dirs.add(d);
    const parts = d.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  const files = [...entries.values()].filter((e) => !dirs.has(e.path)).sort((a, b) => a.path.localeCompare(b.path));
  return [...[...dirs].sort().map(cpioDir), ...files];
}

export function guestQuoteScript(): string | null {
  const p = GUEST_QUOTE_SCRIPT;
  return existsSync(p) ? p : null;
}

/** The initramfs bytes: deterministic for equal inputs (fixed mtimes/owners, sorted entries). */
export function buildInitramfs(opts: { kernelVersion: string; initScript?: string; extraFiles?: Record<string, Buffer> }): Buffer {
  const files = new Map<string, CpioEntry>();
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new VmmError('unavailable', 'busybox-static is missing: install it with `apt-get install busybox-static`');
  files.set('bin/busybox', cpioFile('bin/busybox', readFileSync(realpathSync(busybox)), 0o755));
  const tpm2 = ['/usr/bin/tpm2', '/bin/tpm2'].find((p) => existsSync(p));
  if (!tpm2) throw new VmmError('unavailable', 'tpm2-tools is missing: install it with `apt-get install tpm2-tools`');
  files.set('usr/bin/tpm2', cpioFile('usr/bin/tpm2', readFileSync(tpm2), 0o755));
  for (const f of readdirSync(dirname(tpm2))) {
    if (f.startsWith('tpm2_')) files.set(`usr/bin/${f}`, cpioLink(`usr/bin/${f}`, 'tpm2'));
  }
  const libDir = '/lib/x86_64-linux-gnu';
  const dlopened = ['libtss2-tcti-device.so.0'].map((l) => join(libDir, l)).filter((p) => existsSync(p));
  for (const bin of [tpm2, ...dlopened]) {
    for (const lib of libsOf(bin)) addHostFile(files, lib);
  }
  for (const lib of dlopened) addHostFile(files, lib);
  // The test image's SSH server, on the port vm-manager forwards (docs/vm-manager-guests.md, SSH port).
  const dropbear = '/usr/sbin/dropbear';
  if (!existsSync(dropbear)) throw new VmmError('unavailable', 'dropbear is missing: install it with `apt-get install dropbear-bin`');
  addHostFile(files, dropbear);
  for (const lib of libsOf(dropbear)) addHostFile(files, lib);
  const modRoot = join('/lib/modules', opts.kernelVersion);
  const order: string[] = [];
  for (const m of GUEST_MODULES) {
    const found = findModule(modRoot, m);
    if (!found) {
      if (m === 'button' || m === 'evdev') continue; // optional: only for a clean ACPI power-down
      throw new VmmError('unavailable', `kernel module ${m} not found under ${modRoot}: reinstall linux-image-cloud-amd64`);
    }
    files.set(`lib/modules/${m}.ko`, cpioFile(`lib/modules/${m}.ko`, readFileSync(found)));
    order.push(m);
  }
  files.set('etc/povdesk/modules', cpioFile('etc/povdesk/modules', Buffer.from(order.join('\n') + '\n')));
  for (const stage of ['initrd', 'ready'] as const) {
    files.set(`etc/povdesk/pcrs.${stage}`, cpioFile(`etc/povdesk/pcrs.${stage}`, Buffer.from(STAGE_PCRS[stage].join(',') + '\n')));
  }
  const init = opts.initScript ?? readFileSync(vmAsset('guest/init.sh'), 'utf8');
  files.set('init', cpioFile('init', Buffer.from(init), 0o755));
  const quote = guestQuoteScript();
  if (quote) files.set('etc/povdesk/guest-quote.sh', cpioFile('etc/povdesk/guest-quote.sh', readFileSync(quote), 0o755));
  for (const [p, data] of Object.entries(opts.extraFiles ?? {})) files.set(p, cpioFile(p, data, 0o644));
  return gzipSync(writeCpio(withParents(files)), { level: 6 });
}

function findModule(root: string, name: string): string | null {
  const dirs = [
    'kernel/drivers/virtio',
    'kernel/drivers/block',
    'kernel/drivers/net',
    'kernel/net/core',
    'kernel/drivers/acpi',
    'kernel/drivers/input',
  ];
  for (const d of dirs) {
    const p = join(root, d, `${name}.ko`);
    if (existsSync(p)) return p;
  }
  return null;
}

export function firmwareFingerprint(ovmfCode: string | null): Policy['golden_firmware'] {
  if (!ovmfCode || !existsSync(ovmfCode)) return undefined;
  return { path: ovmfCode, sha256: firmwareDigest(ovmfCode) };
}

/** Builds (or rebuilds) the test image: the host's cloud kernel plus our initramfs. Seconds, offline. */
export function buildTestImage(
  stateDir: string,
  opts: { ovmfCode: string | null; name?: string; cmdline?: string; initScript?: string },
): ImageInfo {
  const name = opts.name ?? TEST_IMAGE;
  const { kernel, version } = findKernel();
  const initrd = buildInitramfs({ kernelVersion: version, initScript: opts.initScript });
  const dir = join(imagesDir(stateDir), name);
  const tmp = `${dir}.building-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'vmlinuz'), readFileSync(kernel));
  writeFileSync(join(tmp, 'initrd.img'), initrd);
  const cmdline = opts.cmdline ?? TEST_CMDLINE;
  const kernelSha = sha256File(join(tmp, 'vmlinuz'));
  const initrdSha = createHash('sha256').update(initrd).digest('hex');
  // What the boot will measure, from the files just written (no boot). Only an image whose boot
  // cannot be predicted (e.g. no xz to unpack the firmware) falls back to golden values, which are
  // kept from an identical earlier build (same kernel, initrd, cmdline; firmware recorded).
  const refs = makeReferences(tmp, { kind: 'kernel', kernel: 'vmlinuz', initrd: 'initrd.img', cmdline });
  const old = readImageMeta(dir);
  let oldPolicy: Policy | null;
  try {
    oldPolicy = readPolicy(dir);
  } catch {
    oldPolicy = null; // an invalid old policy is replaced
  }
  const same = !('references' in refs) && old && old.kernelSha256 === kernelSha && old.sha256 === initrdSha && old.cmdline === cmdline;
  const policy: Policy = imagePolicySchema.parse({
    image_id: name,
    image_version: `${version}-${initrdSha.slice(0, 12)}`,
    pcrs: STAGE_PCRS,
    golden: same && oldPolicy ? oldPolicy.golden : { sha256: {} },
    ...(same && oldPolicy?.golden_sizes ? { golden_sizes: oldPolicy.golden_sizes } : {}),
    record_only: RECORD_ONLY,
    ...('references' in refs
      ? { references: refs.references }
      : {
          unpredictable: refs.unpredictable,
          golden_firmware: same && oldPolicy?.golden_firmware ? oldPolicy.golden_firmware : firmwareFingerprint(opts.ovmfCode),
        }),
  });
  const info: ImageInfo = {
    name,
    kind: 'kernel',
    createdAt: new Date().toISOString(),
    kernel: 'vmlinuz',
    initrd: 'initrd.img',
    cmdline,
    sizeBytes: statSync(join(tmp, 'vmlinuz')).size + initrd.length,
    sha256: initrdSha,
    kernelSha256: kernelSha,
  };
  savePolicy(join(tmp, 'policy.json'), policy);
  writeJsonAtomic(join(tmp, 'image.json'), info);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return info;
}
