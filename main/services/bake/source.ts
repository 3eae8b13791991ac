/**
 * The source of a bake: an image file the user picked (qcow2, raw, vmdk, or an OVA/OVF from
 * Skytap or VMware) → a private qcow2 working copy. Only files inside the allowed directories are
 * read; nothing of the source is changed.
 */
import { existsSync, openSync, readSync, closeSync, lstatSync, realpathSync, statSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { headerReferences, infoReferences, type QemuImgInfo } from '../../lib/image-refs';
import { run } from './tools';

const FORMATS = new Set(['qcow2', 'raw', 'vmdk']);

/** The real path of `file` when it lies inside one of `dirs` (symlinks resolved), else a clear refusal. */
export function allowedSource(file: string, dirs: string[]): string {
  const abs = resolve(file);
  if (!existsSync(abs)) throw new AppError('invalid_request', `${abs} does not exist: pick an image file (qcow2, raw, vmdk, .ova or .ovf)`);
  const real = realpathSync(abs);
  const inside = dirs.some((d) => {
    if (!existsSync(d)) return false;
    const root = realpathSync(d);
    return real === root || real.startsWith(root + sep);
  });
  if (!inside) {
    throw new AppError(
      'invalid_request',
      `${real} is outside the directories a bake may read (${dirs.join(', ')}): copy the image into one of them first`,
    );
  }
  if (!statSync(real).isFile())
    throw new AppError('invalid_request', `${real} is not a file: pick an image file (qcow2, raw, vmdk, .ova or .ovf)`);
  return real;
}

interface TarEntry {
  name: string;
  type: string;
}

async function tarEntries(file: string, signal?: AbortSignal): Promise<TarEntry[]> {
  const out = await run('tar', ['-tvf', file], {
    signal,
    what: `reading ${basename(file)} as an OVA (tar)`,
    hint: 'an OVA is a tar archive holding an .ovf and its .vmdk disks',
  });
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ type: l[0] ?? '?', name: l.split(/\s+/).slice(5).join(' ') }));
}

/** The VMDK an OVF names (one disk: a control node has one). */
export function ovfDisk(ovfText: string, where: string): string {
  const hrefs = [...ovfText.matchAll(/<(?:ovf:)?File\b[^>]*?(?:ovf:)?href="([^"]+)"/g)].map((m) => m[1] ?? '');
  const disks = hrefs.filter((h) => /\.vmdk$/i.test(h));
  if (disks.length === 0) throw new AppError('invalid_request', `${where} names no .vmdk disk: export the VM again with its disk`);
  if (disks.length > 1)
    throw new AppError(
      'invalid_request',
      `${where} names ${disks.length} disks (${disks.join(', ')}): a control-node template has one; export just the system disk`,
    );
  const d = disks[0] ?? '';
  if (d.includes('/') || d.includes('\\') || d.startsWith('.'))
    throw new AppError('invalid_request', `${where} names the disk "${d}", which is not a plain file name`);
  return d;
}

/** The disk file inside an OVA (extracted into `work`) or beside an OVF. */
export async function diskOf(src: string, work: string, signal?: AbortSignal): Promise<string> {
  if (/\.ova$/i.test(src)) {
    const entries = await tarEntries(src, signal);
    const bad = entries.find((e) => e.type !== '-' || e.name.includes('/') || e.name.startsWith('.'));
    if (bad)
      throw new AppError(
        'invalid_request',
        `${src} holds "${bad.name}", which is not a plain file: an OVA holds only .ovf, .mf and disk files`,
      );
    const ovf = entries.filter((e) => /\.ovf$/i.test(e.name));
    if (ovf.length !== 1)
      throw new AppError('invalid_request', `${src} holds ${ovf.length} .ovf descriptors; an OVA for one VM holds exactly one`);
    await run('tar', ['-xf', src, '-C', work, ovf[0]!.name], { signal, what: 'extracting the OVF' });
    const disk = ovfDisk(readFileSync(join(work, ovf[0]!.name), 'utf8'), `${basename(src)}/${ovf[0]!.name}`);
    if (!entries.some((e) => e.name === disk)) throw new AppError('invalid_request', `${src} does not hold ${disk}, which its OVF names`);
    await run('tar', ['-xf', src, '-C', work, disk], { signal, what: 'extracting the disk' });
    return join(work, disk);
  }
  if (/\.ovf$/i.test(src)) {
    const disk = join(dirname(src), ovfDisk(readFileSync(src, 'utf8'), basename(src)));
    if (!existsSync(disk))
      throw new AppError('invalid_request', `${disk}, named by ${basename(src)}, is missing: keep the .vmdk beside the .ovf`);
    // the source's check of the allowed directories covered the .ovf, not a link beside it
    if (!lstatSync(disk).isFile())
      throw new AppError(
        'invalid_request',
        `${disk}, named by ${basename(src)}, is not a plain file (a link?): keep the .vmdk itself beside the .ovf`,
      );
    return disk;
  }
  return src;
}

function hasPartitionTable(file: string): boolean {
  const head = Buffer.alloc(1024);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 1024, 0);
  } finally {
    closeSync(fd);
  }
  return (head[510] === 0x55 && head[511] === 0xaa) || head.subarray(512, 520).toString('latin1') === 'EFI PART';
}

export interface ImageFacts {
  format: string;
  virtualSize: number;
}

/** Refuses an image that names other files: qemu-img convert would copy them into the template. */
function refuseReferences(file: string, refs: string[]): void {
  if (refs.length) {
    throw new AppError(
      'invalid_request',
      `${basename(file)} names files outside itself (${refs.join('; ')}): a bake reads only the image file itself; flatten it ` +
        `into one file first (qemu-img convert -O qcow2) and bake that`,
    );
  }
}

export async function imageFacts(file: string, signal?: AbortSignal): Promise<ImageFacts> {
  refuseReferences(file, headerReferences(file)); // before qemu-img opens anything it names
  let info: QemuImgInfo;
  try {
    info = JSON.parse(await run('qemu-img', ['info', '--output=json', file], { signal, what: `qemu-img info ${basename(file)}` }));
  } catch (e) {
    if ((e as AppError).code === 'cancelled') throw e;
    throw new AppError('invalid_request', `${basename(file)} is not a disk image qemu-img can read: pick a qcow2, raw, vmdk, .ova or .ovf`);
  }
  const format = info.format ?? '';
  if (!FORMATS.has(format))
    throw new AppError(
      'invalid_request',
      `${basename(file)} is ${format || 'of an unknown format'}; a bake takes qcow2, raw or vmdk (or an OVA/OVF holding a vmdk)`,
    );
  refuseReferences(file, infoReferences(file, info));
  // qemu-img calls any file "raw": a disk has a partition table.
  if (format === 'raw' && !hasPartitionTable(file))
    throw new AppError('invalid_request', `${basename(file)} is not a disk image: it has no MBR or GPT partition table`);
  return { format, virtualSize: info['virtual-size'] ?? 0 };
}

/** The working copy every later stage changes: qcow2, never the source itself. */
export async function workingCopy(disk: string, out: string, signal?: AbortSignal): Promise<ImageFacts> {
  const facts = await imageFacts(disk, signal);
  await run('qemu-img', ['convert', '-f', facts.format, '-O', 'qcow2', disk, out], { signal, what: 'qemu-img convert (working copy)' });
  return facts;
}
