/**
 * Read-only FAT12/16/32 (an EFI system partition): directories with long names, files by path
 * (case-insensitive, as UEFI treats them).
 */
import { DiskError } from './image-file';

export interface FsEntry {
  name: string;
  dir: boolean;
  size: number;
}

type Raw = FsEntry & { cluster: number };

export class FatFs {
  private readonly bps: number;
  private readonly clusterBytes: number;
  private readonly fat: Buffer;
  private readonly bits: 12 | 16 | 32;
  private readonly firstData: number;
  private readonly rootCluster: number;
  private readonly rootStart: number;
  private readonly rootBytes: number;

  constructor(private readonly read: (offset: number, length: number) => Buffer) {
    const b = read(0, 512);
    if (b[510] !== 0x55 || b[511] !== 0xaa) throw new DiskError('not a FAT file system (no boot signature)');
    this.bps = b.readUInt16LE(11);
    const spc = b[13]!;
    const reserved = b.readUInt16LE(14);
    const fats = b[16]!;
    const rootEntries = b.readUInt16LE(17);
    const total = b.readUInt16LE(19) || b.readUInt32LE(32);
    const fatSectors = b.readUInt16LE(22) || b.readUInt32LE(36);
    if (![512, 1024, 2048, 4096].includes(this.bps) || spc === 0 || fats === 0 || fatSectors === 0)
      throw new DiskError('not a FAT file system (its BPB is not valid)');
    const rootSectors = Math.ceil((rootEntries * 32) / this.bps);
    const firstDataSector = reserved + fats * fatSectors + rootSectors;
    const clusters = Math.floor((total - firstDataSector) / spc);
    this.bits = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
    this.clusterBytes = spc * this.bps;
    this.fat = read(reserved * this.bps, fatSectors * this.bps);
    this.firstData = firstDataSector * this.bps;
    this.rootCluster = this.bits === 32 ? b.readUInt32LE(44) : 0;
    this.rootStart = (reserved + fats * fatSectors) * this.bps;
    this.rootBytes = rootSectors * this.bps;
  }

  private next(c: number): number | null {
    let v: number;
    if (this.bits === 12) {
      const o = c + (c >> 1);
      const w = this.fat.readUInt16LE(o);
      v = c & 1 ? w >> 4 : w & 0xfff;
      return v >= 0xff8 ? null : v;
    }
    if (this.bits === 16) {
      v = this.fat.readUInt16LE(c * 2);
      return v >= 0xfff8 ? null : v;
    }
    v = this.fat.readUInt32LE(c * 4) & 0x0fffffff;
    return v >= 0x0ffffff8 ? null : v;
  }

  private chain(first: number, limit: number): Buffer {
    const parts: Buffer[] = [];
    let got = 0;
    for (let c: number | null = first, n = 0; c !== null && c >= 2 && got < limit; c = this.next(c), n++) {
      if (n > 1 << 22) throw new DiskError('a FAT cluster chain loops');
      parts.push(this.read(this.firstData + (c - 2) * this.clusterBytes, this.clusterBytes));
      got += this.clusterBytes;
    }
    return Buffer.concat(parts).subarray(0, limit);
  }

  private entries(cluster: number): Raw[] {
    const data =
      cluster === 0 && this.bits !== 32
        ? this.read(this.rootStart, this.rootBytes)
        : this.chain(cluster || this.rootCluster, 64 * 1024 * 1024);
    const out: Raw[] = [];
    let long: string[] = [];
    for (let o = 0; o + 32 <= data.length; o += 32) {
      const e = data.subarray(o, o + 32);
      if (e[0] === 0) break;
      if (e[0] === 0xe5) {
        long = [];
        continue;
      }
      const attr = e[11]!;
      if (attr === 0x0f) {
        const part = Buffer.concat([e.subarray(1, 11), e.subarray(14, 26), e.subarray(28, 32)]).toString('utf16le');
        long.unshift(part.split('\0')[0]!);
        continue;
      }
      if (attr & 0x08) {
        long = [];
        continue;
      }
      // byte 12: Windows NT's case flags for a short name (0x08 base, 0x10 extension in lower case)
      const lower = (t: string, bit: number) => (e[12]! & bit ? t.toLowerCase() : t);
      const base = lower(e.toString('latin1', 0, 8).trimEnd(), 0x08);
      const ext = lower(e.toString('latin1', 8, 11).trimEnd(), 0x10);
      const name = long.length ? long.join('') : ext ? `${base}.${ext}` : base;
      long = [];
      if (name === '.' || name === '..') continue;
      out.push({
        name,
        dir: (attr & 0x10) !== 0,
        size: e.readUInt32LE(28),
        cluster: (this.bits === 32 ? e.readUInt16LE(20) << 16 : 0) | e.readUInt16LE(26),
      });
    }
    return out;
  }

  private lookup(path: string): Raw | null {
    let cur: Raw = { name: '/', dir: true, size: 0, cluster: 0 };
    for (const part of path.split('/').filter(Boolean)) {
      if (!cur.dir) return null;
      const found = this.entries(cur.cluster).find((e) => e.name.toLowerCase() === part.toLowerCase());
      if (!found) return null;
      cur = found;
    }
    return cur;
  }

  list(path: string): FsEntry[] | null {
    const d = this.lookup(path);
    return d?.dir ? this.entries(d.cluster).map(({ name, dir, size }) => ({ name, dir, size })) : null;
  }

  readFile(path: string): Buffer | null {
    const f = this.lookup(path);
    if (!f || f.dir) return null;
    return f.size === 0 ? Buffer.alloc(0) : this.chain(f.cluster, f.size);
  }
}
