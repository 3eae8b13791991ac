/**
 * Read access to a disk image's guest bytes without attaching it: a raw file, or a qcow2 (versions
 * 2 and 3) read through its L1/L2 tables. What the image store imports is a qcow2 written by
 * `qemu-img convert` (no backing file, no external data file, clusters not compressed), so that is
 * what this reads; anything else is refused with a DiskError saying what.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

export class DiskError extends Error {}

export interface DiskReader {
  /** the guest-visible size in bytes */
  size: number;
  /** `length` guest bytes at `offset` (unallocated ranges read as zeros) */
  read(offset: number, length: number): Buffer;
  close(): void;
}

function pread(fd: number, offset: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  return buf;
}

const QCOW2_MAGIC = 0x514649fb;
const OFFSET_MASK = 0x00fffffffffffe00n;

/** Opens a raw or qcow2 file for reading its guest bytes. */
export function openDisk(path: string): DiskReader {
  const fd = openSync(path, 'r');
  try {
    const head = pread(fd, 0, 104);
    if (head.length >= 4 && head.readUInt32BE(0) === QCOW2_MAGIC) return qcow2(fd, head, path);
    const size = fstatSync(fd).size;
    return {
      size,
      read: (offset, length) => pread(fd, offset, Math.max(0, Math.min(length, size - offset))),
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

function qcow2(fd: number, h: Buffer, path: string): DiskReader {
  const version = h.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new DiskError(`${path} is qcow2 version ${version}; versions 2 and 3 are read`);
  if (h.readBigUInt64BE(8) !== 0n) throw new DiskError(`${path} has a backing file: its bytes are not all in this file`);
  const clusterBits = h.readUInt32BE(20);
  if (clusterBits < 9 || clusterBits > 21) throw new DiskError(`${path} has clusters of 2^${clusterBits} bytes`);
  const size = Number(h.readBigUInt64BE(24));
  if (h.readUInt32BE(32) !== 0) throw new DiskError(`${path} is encrypted`);
  const l1Size = h.readUInt32BE(36);
  const l1Offset = Number(h.readBigUInt64BE(40));
  if (version === 3) {
    const incompatible = h.readBigUInt64BE(72);
    // bit 0 dirty and bit 1 corrupt are about consistency; data file (2), compression type (3) and
    // extended L2 (4) change how bytes are found
    if (incompatible & ~0x3n)
      throw new DiskError(
        `${path} uses qcow2 features this reader does not ` +
          `(incompatible bits 0x${incompatible.toString(16)}: external data file, zstd or extended L2 entries)`,
      );
  }
  const cluster = 2 ** clusterBits;
  const l2Entries = cluster / 8;
  const l1 = pread(fd, l1Offset, l1Size * 8);
  const l2Cache = new Map<number, Buffer>();
  /** the last compressed clusters read, inflated (small reads of one file hit the same cluster) */
  const inflated = new Map<number, Buffer>();
  const l2 = (offset: number) => {
    let t = l2Cache.get(offset);
    if (!t) {
      if (l2Cache.size > 256) l2Cache.clear();
      t = pread(fd, offset, cluster);
      l2Cache.set(offset, t);
    }
    return t;
  };
  const readCluster = (index: number): Buffer => {
    const l1i = Math.floor(index / l2Entries);
    if (l1i >= l1Size) return Buffer.alloc(cluster);
    const l2Offset = Number(l1.readBigUInt64BE(l1i * 8) & OFFSET_MASK);
    if (l2Offset === 0) return Buffer.alloc(cluster);
    const entry = l2(l2Offset).readBigUInt64BE((index % l2Entries) * 8);
    if (entry & (1n << 62n)) {
      const hit = inflated.get(index);
      if (hit) return hit;
      // compressed: raw deflate of the cluster (qcow2's default compression)
      const x = 62 - (clusterBits - 8);
      const hostOffset = Number(entry & ((1n << BigInt(x)) - 1n));
      const sectors = Number((entry >> BigInt(x)) & ((1n << BigInt(62 - x)) - 1n)) + 1;
      const data = pread(fd, hostOffset, sectors * 512 - (hostOffset % 512));
      const out = inflateRawSync(data, { finishFlush: 2 /* Z_SYNC_FLUSH */ });
      const c = out.length >= cluster ? out.subarray(0, cluster) : Buffer.concat([out, Buffer.alloc(cluster - out.length)]);
      if (inflated.size > 64) inflated.delete(inflated.keys().next().value!);
      inflated.set(index, c);
      return c;
    }
    if (version === 3 && entry & 1n) return Buffer.alloc(cluster); // reads as zeros
    const host = Number(entry & OFFSET_MASK);
    return host === 0 ? Buffer.alloc(cluster) : pread(fd, host, cluster);
  };
  return {
    size,
    read(offset, length) {
      const end = Math.min(offset + length, size);
      const parts: Buffer[] = [];
      for (let at = offset; at < end;) {
        const index = Math.floor(at / cluster);
        const within = at - index * cluster;
        const take = Math.min(cluster - within, end - at);
        parts.push(readCluster(index).subarray(within, within + take));
        at += take;
      }
      return Buffer.concat(parts);
    },
    close: () => closeSync(fd),
  };
}
