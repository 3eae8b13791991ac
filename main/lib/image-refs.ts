/**
 * The one check for disk images that name other files: a VMDK text descriptor (its extents), a
 * sparse VMDK that defers to an embedded descriptor or names a parent, a qcow2 backing file or
 * external data-file. Whatever such a file names, `qemu-img convert` reads and copies into its
 * output, so a crafted image would carry a host file (an SSH key, another user's disk) into a
 * baked template or the vm-manager's image store. The bake's source (main/services/bake/
 * source.ts) and the vm-manager's image import (main/vm-manager/images.ts) both refuse any.
 *
 * Two passes, each returning what it found ([] when nothing):
 * - `headerReferences(file)` reads the file's own bytes before any tool opens it, so qemu-img
 *   never opens a named file (a FIFO there would hang it, a device would be read);
 * - `infoReferences(file, info)` reads `qemu-img info --output=json` as the backstop: any backing
 *   file, data-file, or VMDK extent other than the file itself.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';

/** The part of `qemu-img info --output=json` the check reads. */
export interface QemuImgInfo {
  format?: string;
  'virtual-size'?: number;
  'backing-filename'?: string;
  'full-backing-filename'?: string;
  'format-specific'?: { type?: string; data?: { 'data-file'?: string; extents?: { filename?: string }[] } };
}

/** QEMU's vmdk driver looks for `parentFileNameHint` in this window of a sparse VMDK (DESC_SIZE at 0x200). */
const SPARSE_DESC = { offset: 0x200, bytes: 20 * 512 };
const HEAD_BYTES = SPARSE_DESC.offset + SPARSE_DESC.bytes;

/** Up to `bytes` of a file from `pos`, without reading the rest. */
function readAt(file: string, pos: number, bytes: number): Buffer {
  const buf = Buffer.alloc(bytes);
  const fd = openSync(file, 'r');
  try {
    return buf.subarray(0, readSync(fd, buf, 0, bytes, pos));
  } finally {
    closeSync(fd);
  }
}

/**
 * True when QEMU's vmdk probe would take this text as a descriptor: after comment lines (`#…`)
 * and blank lines, a `version=N` line. The `# Disk DescriptorFile` comment is not required.
 */
export function looksLikeDescriptor(head: Buffer): boolean {
  const text = head.toString('latin1');
  if (/#\s*Disk\s*DescriptorFile/i.test(text)) return true;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || /^ *\r?$/.test(line)) continue;
    return /^version=\d\r?$/.test(line);
  }
  return false;
}

/** What the file's own header names (see the module comment); [] for a self-contained image. */
export function headerReferences(file: string): string[] {
  const head = readAt(file, 0, HEAD_BYTES);
  const magic = head.subarray(0, 4).toString('latin1');
  const refs: string[] = [];
  if (magic === 'QFI\xfb' && head.length >= 20) {
    if (head.readBigUInt64BE(8) !== 0n) refs.push('a backing file (qcow2 header)');
    // version 3 headers: incompatible feature bit 2 is "external data file"
    if (head.readUInt32BE(4) >= 3 && head.length >= 80 && (head.readBigUInt64BE(72) & 4n) !== 0n)
      refs.push('an external data-file (qcow2 header)');
  } else if (magic === 'KDMV' || magic === 'COWD') {
    // capacity 0 with a descriptor offset: QEMU opens the embedded descriptor as a descriptor file
    if (magic === 'KDMV' && head.length >= 44 && head.readBigUInt64LE(12) === 0n && head.readBigUInt64LE(28) !== 0n) {
      refs.push('a descriptor in place of data (sparse VMDK of capacity 0)');
    }
    if (head.subarray(SPARSE_DESC.offset).includes('parentFileNameHint')) refs.push('a parent disk (VMDK parentFileNameHint)');
  } else if (looksLikeDescriptor(head.subarray(0, 2048))) {
    refs.push('its extents (a VMDK text descriptor)');
  }
  return refs;
}

/** What `qemu-img info` says the image opens besides `file` (the path qemu-img was given, run in this cwd). */
export function infoReferences(file: string, info: QemuImgInfo): string[] {
  const refs: string[] = [];
  const backing = info['backing-filename'] ?? info['full-backing-filename'];
  if (backing) refs.push(`backing file ${backing}`);
  const data = info['format-specific']?.data;
  if (data?.['data-file']) refs.push(`data-file ${data['data-file']}`);
  for (const e of data?.extents ?? []) {
    if (!e.filename || resolve(e.filename) !== resolve(file)) refs.push(`extent ${e.filename ?? '(unnamed)'}`);
  }
  return [...new Set(refs)];
}
