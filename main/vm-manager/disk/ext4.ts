/**
 * Read-only ext2/3/4: files and directories by path (extent trees or block maps, htree directories
 * read linearly, symlinks followed). Enough to read /boot of a Linux image; inline data and
 * encryption are refused with a DiskError.
 */
import { DiskError } from './image-file';
import type { FsEntry } from './fat';

const EXTENTS_FL = 0x80000;
const INLINE_DATA_FL = 0x10000000;
const S_IFMT = 0xf000;
const S_IFDIR = 0x4000;
const S_IFLNK = 0xa000;

interface Inode {
  mode: number;
  size: number;
  flags: number;
  block: Buffer;
}

export class Ext4Fs {
  private readonly bs: number;
  private readonly ipg: number;
  private readonly inodeSize: number;
  private readonly descSize: number;
  private readonly gdt: number;
  private readonly groups: number;

  constructor(private readonly read: (offset: number, length: number) => Buffer) {
    const sb = read(1024, 1024);
    if (sb.readUInt16LE(56) !== 0xef53) throw new DiskError('not an ext2/3/4 file system (no 0xEF53 magic)');
    this.bs = 1024 << sb.readUInt32LE(24);
    this.ipg = sb.readUInt32LE(40);
    this.inodeSize = sb.readUInt32LE(76) >= 1 ? sb.readUInt16LE(88) : 128;
    const incompat = sb.readUInt32LE(96);
    if (incompat & 0x10000) throw new DiskError('the ext4 file system is encrypted');
    this.descSize = incompat & 0x80 ? Math.max(32, sb.readUInt16LE(254)) : 32;
    this.gdt = (sb.readUInt32LE(20) + 1) * this.bs;
    this.groups = Math.ceil(sb.readUInt32LE(0) / this.ipg);
  }

  private inode(n: number): Inode {
    const group = Math.floor((n - 1) / this.ipg);
    if (n < 1 || group >= this.groups) throw new DiskError(`inode ${n} is outside the file system`);
    const d = this.read(this.gdt + group * this.descSize, this.descSize);
    const table = d.readUInt32LE(8) + (this.descSize >= 64 ? d.readUInt32LE(40) * 2 ** 32 : 0);
    const raw = this.read(table * this.bs + ((n - 1) % this.ipg) * this.inodeSize, Math.min(this.inodeSize, 160));
    return {
      mode: raw.readUInt16LE(0),
      size: raw.readUInt32LE(4) + raw.readUInt32LE(108) * 2 ** 32,
      flags: raw.readUInt32LE(32),
      block: Buffer.from(raw.subarray(40, 100)),
    };
  }

  /** [logical block, physical block, count] runs of an inode's data (physical 0: a hole or unwritten). */
  private runs(ino: Inode): [number, number, number][] {
    if (ino.flags & INLINE_DATA_FL) throw new DiskError('a file stored inline in its inode (inline_data) is not read here');
    const out: [number, number, number][] = [];
    if (ino.flags & EXTENTS_FL) {
      const walk = (node: Buffer, depth: number) => {
        if (node.readUInt16LE(0) !== 0xf30a) throw new DiskError('a broken ext4 extent tree');
        const entries = node.readUInt16LE(2);
        for (let i = 0; i < entries; i++) {
          const e = node.subarray(12 + i * 12, 24 + i * 12);
          if (node.readUInt16LE(6) === 0) {
            const len = e.readUInt16LE(4);
            const start = e.readUInt16LE(6) * 2 ** 32 + e.readUInt32LE(8);
            out.push(len > 32768 ? [e.readUInt32LE(0), 0, len - 32768] : [e.readUInt32LE(0), start, len]);
          } else {
            if (depth > 8) throw new DiskError('an ext4 extent tree deeper than 8');
            walk(this.read((e.readUInt32LE(4) + e.readUInt16LE(8) * 2 ** 32) * this.bs, this.bs), depth + 1);
          }
        }
      };
      walk(ino.block, 0);
      return out;
    }
    const per = this.bs / 4;
    let logical = 0;
    const indirect = (block: number, level: number) => {
      if (block === 0) {
        logical += per ** level;
        return;
      }
      if (level === 0) {
        out.push([logical++, block, 1]);
        return;
      }
      const t = this.read(block * this.bs, this.bs);
      for (let i = 0; i < per; i++) indirect(t.readUInt32LE(i * 4), level - 1);
    };
    for (let i = 0; i < 12; i++) indirect(ino.block.readUInt32LE(i * 4), 0);
    for (let level = 1; level <= 3; level++) indirect(ino.block.readUInt32LE((11 + level) * 4), level);
    return out;
  }

  private data(ino: Inode): Buffer {
    if (ino.size > 512 * 1024 * 1024) throw new DiskError(`a file of ${ino.size} bytes is over the 512 MiB read limit`);
    const buf = Buffer.alloc(ino.size);
    for (const [logical, physical, count] of this.runs(ino)) {
      const at = logical * this.bs;
      if (physical === 0 || at >= ino.size) continue;
      const len = Math.min(count * this.bs, ino.size - at);
      this.read(physical * this.bs, len).copy(buf, at);
    }
    return buf;
  }

  private dirEntries(ino: Inode): (FsEntry & { inode: number })[] {
    const d = this.data(ino);
    const out: (FsEntry & { inode: number })[] = [];
    for (let o = 0; o + 8 <= d.length;) {
      const inode = d.readUInt32LE(o);
      const rec = d.readUInt16LE(o + 4);
      const len = d[o + 6]!;
      if (rec < 8) break;
      if (inode !== 0 && len > 0) {
        const name = d.toString('utf8', o + 8, o + 8 + len);
        if (name !== '.' && name !== '..') out.push({ name, inode, dir: d[o + 7] === 2, size: 0 });
      }
      o += rec;
    }
    return out;
  }

  /** The inode of a path, following symlinks (at most 16). */
  private resolve(path: string, hops = 0): Inode | null {
    if (hops > 16) throw new DiskError(`too many symlinks resolving ${path}`);
    const parts = path.split('/').filter(Boolean);
    let cur = this.inode(2);
    const seen: string[] = [];
    for (let i = 0; i < parts.length; i++) {
      if ((cur.mode & S_IFMT) !== S_IFDIR) return null;
      if (parts[i] === '.') continue;
      if (parts[i] === '..') {
        seen.pop();
        cur = this.resolve(`/${seen.join('/')}`, hops + 1)!;
        continue;
      }
      const e = this.dirEntries(cur).find((x) => x.name === parts[i]);
      if (!e) return null;
      const next = this.inode(e.inode);
      if ((next.mode & S_IFMT) === S_IFLNK) {
        const target =
          next.size < 60 && !(next.flags & EXTENTS_FL) ? next.block.toString('utf8', 0, next.size) : this.data(next).toString('utf8');
        const rest = parts.slice(i + 1).join('/');
        return this.resolve(`${target.startsWith('/') ? '' : `/${seen.join('/')}/`}${target}/${rest}`, hops + 1);
      }
      seen.push(parts[i]!);
      cur = next;
    }
    return cur;
  }

  list(path: string): FsEntry[] | null {
    const d = this.resolve(path);
    if (!d || (d.mode & S_IFMT) !== S_IFDIR) return null;
    return this.dirEntries(d).map((e) => {
      const ino = this.inode(e.inode);
      const type = ino.mode & S_IFMT;
      return { name: e.name, dir: type === S_IFDIR, size: type === S_IFLNK ? -1 : ino.size };
    });
  }

  readFile(path: string): Buffer | null {
    const f = this.resolve(path);
    if (!f || (f.mode & S_IFMT) === S_IFDIR) return null;
    return this.data(f);
  }
}
