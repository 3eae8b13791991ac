/**
 * Importing a user's disk image (qcow2, raw or vmdk) into the store (images.ts): checked with
 * qemu-img info, refused when it names other files, converted to a qcow2 base with its reference
 * measurements made from the disk's files.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { VmmError } from './errors';
import { imagePolicySchema, savePolicy } from './attest/index';
import { findTool } from './finders';
import { headerReferences, infoReferences, type QemuImgInfo } from '../lib/image-refs';
import { dyingWithParent } from '../lib/procs';
import { makeReferences } from './image-references';
import { DISK_STAGE_PCRS, imagesDir, IMAGE_NAME_RE, RECORD_ONLY, writeJsonAtomic, type ImageInfo, type Policy } from './images';

/**
 * sha256 of a file, streamed in 1 MiB chunks: the daemon keeps answering (attestation, the metadata
 * service, QMP) while a disk image of many GiB is read.
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
  if (!IMAGE_NAME_RE.test(name))
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
