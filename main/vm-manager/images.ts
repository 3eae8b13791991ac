/**
 * The image store under <state>/images/<name>/: image.json (what it is and how it boots),
 * policy.json (reference measurements, or golden PCR values), and the boot files (vmlinuz +
 * initrd.img, or base.qcow2).
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  createReadStream,
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
import { basename, dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { vmAsset } from './assets';
import { cpioDir, cpioFile, cpioLink, writeCpio, type CpioEntry } from './cpio';
import { VmmError } from './errors';
import { GUEST_QUOTE_SCRIPT, firmwareDigest, imagePolicySchema, loadPolicy, savePolicy, type ImagePolicy } from './attest/index';
import { findTool } from './finders';
import { headerReferences, infoReferences, type QemuImgInfo } from '../lib/image-refs';
import { dyingWithParent } from '../lib/procs';
import { makeReferences } from './image-references';

export const TEST_IMAGE = 'povdesk-test';
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

/**
 * The same, streamed: the daemon keeps answering (attestation, the metadata service, QMP) while a
 * disk image of many GiB is read.
 */
function sha256FileAsync(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file, { highWaterMark: 1024 * 1024 })
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}

const execFileAsync = promisify(execFile);

/** The first `bytes` of a file (fewer when it is shorter), without reading the rest. */
function fileHead(file: string, bytes: number): Buffer {
  const buf = Buffer.alloc(bytes);
  const fd = openSync(file, 'r');
  try {
    return buf.subarray(0, readSync(fd, buf, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

export function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
  renameSync(tmp, file);
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

function readImageMeta(dir: string): ImageInfo | null {
  try {
    return JSON.parse(readFileSync(join(dir, 'image.json'), 'utf8')) as ImageInfo;
  } catch {
    return null;
  }
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function listImages(stateDir: string): (ImageInfo & { dir: string; policy: Policy | null })[] {
  const root = imagesDir(stateDir);
  if (!existsSync(root)) return [];
  const out: (ImageInfo & { dir: string; policy: Policy | null })[] = [];
  for (const n of readdirSync(root).sort()) {
    const dir = join(root, n);
    const metaFile = join(dir, 'image.json');
    if (!NAME_RE.test(n) || !existsSync(metaFile)) continue;
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
  if (!NAME_RE.test(name))
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

const FORMATS = new Set(['qcow2', 'raw', 'vmdk']);
const MAX_IMPORT_BYTES = 512 * 1024 ** 3;

/** Names being imported now: a second import of the same name is refused while the first runs. */
const importing = new Set<string>();

/**
 * Imports a user's qcow2/raw/vmdk: checked with qemu-img info, converted to a qcow2 base. qemu-img
 * runs as a child and the hash is streamed, so the daemon answers its VMs all along (an import of a
 * large disk used to stop attestation, the metadata service and QMP for its whole length).
 */
export async function importImage(
  stateDir: string,
  file: string,
  opts: { name?: string; maxVirtualBytes?: number } = {},
): Promise<ImageInfo> {
  const src = resolve(file);
  if (!existsSync(src) || !statSync(src).isFile())
    throw new VmmError('invalid_request', `${src} is not a file: give the path of a qcow2, raw or vmdk image`);
  const name =
    opts.name ??
    basename(src)
      .replace(/\.[^.]*$/, '')
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 63);
  if (!NAME_RE.test(name))
    throw new VmmError('invalid_request', `cannot derive an image name from ${basename(src)}: pass --name <dns-label>`);
  // Files the image names (main/lib/image-refs.ts): refused before qemu-img opens any, and after.
  const refuse = (refs: string[]) => {
    if (refs.length)
      throw new VmmError(
        'invalid_request',
        `${src} names external files (${refs.join('; ')}); import a flattened single-file image (qemu-img convert -O qcow2)`,
      );
  };
  refuse(headerReferences(src));
  const head = fileHead(src, 1024);
  let info: QemuImgInfo;
  try {
    info = JSON.parse(
      (
        await execFileAsync(findTool('qemu-img') ?? 'qemu-img', ['info', '--output=json', src], {
          encoding: 'utf8',
          maxBuffer: 16 * 1024 * 1024,
        })
      ).stdout,
    );
  } catch (e) {
    throw new VmmError('invalid_request', `qemu-img cannot read ${src}: ${String((e as { stderr?: string }).stderr ?? e).trim()}`);
  }
  const format = info.format ?? '';
  if (!FORMATS.has(format))
    throw new VmmError('invalid_request', `${src} is ${format || 'of an unknown format'}; import takes qcow2, raw or vmdk`);
  refuse(infoReferences(src, info));
  const vsize = info['virtual-size'] ?? 0;
  const max = opts.maxVirtualBytes ?? MAX_IMPORT_BYTES;
  if (vsize <= 0) throw new VmmError('invalid_request', `${src} has no virtual size; it is not a disk image`);
  if (vsize > max) throw new VmmError('invalid_request', `${src} is ${vsize} bytes virtual, over the ${max}-byte limit`);
  if (format === 'raw') {
    // qemu-img calls any file "raw": demand a boot sector or a GPT so a text file is not taken for a disk.
    const mbr = head[510] === 0x55 && head[511] === 0xaa;
    const gpt = head.subarray(512, 520).toString('latin1') === 'EFI PART';
    if (!mbr && !gpt) throw new VmmError('invalid_request', `${src} is not a disk image: a raw image needs an MBR or GPT partition table`);
  }
  const dir = join(imagesDir(stateDir), name);
  if (existsSync(dir) || importing.has(name))
    throw new VmmError(
      'conflict',
      `image "${name}" exists${importing.has(name) ? ' (being imported)' : ''}; delete it first or pass another --name`,
    );
  importing.add(name);
  const tmp = `${dir}.importing-${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(tmp, { recursive: true });
  try {
    await execFileAsync(
      ...dyingWithParent(findTool('qemu-img') ?? 'qemu-img', ['convert', '-f', format, '-O', 'qcow2', src, join(tmp, 'base.qcow2')]),
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const meta: ImageInfo = {
      name,
      kind: 'disk',
      createdAt: new Date().toISOString(),
      disk: 'base.qcow2',
      sourceFormat: format,
      virtualSizeBytes: vsize,
      sizeBytes: statSync(join(tmp, 'base.qcow2')).size,
      sha256: await sha256FileAsync(join(tmp, 'base.qcow2')),
    };
    const refs = makeReferences(tmp, { kind: 'disk', disk: 'base.qcow2' });
    const policy: Policy = imagePolicySchema.parse({
      image_id: name,
      image_version: meta.sha256.slice(0, 12),
      pcrs: DISK_STAGE_PCRS,
      golden: { sha256: {} },
      record_only: RECORD_ONLY,
      ...refs,
    });
    savePolicy(join(tmp, 'policy.json'), policy);
    writeJsonAtomic(join(tmp, 'image.json'), meta);
    renameSync(tmp, dir);
    return meta;
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (e instanceof VmmError) throw e;
    throw new VmmError('internal', `qemu-img convert of ${src} failed: ${String((e as { stderr?: string }).stderr || e).trim()}`);
  } finally {
    importing.delete(name);
  }
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
