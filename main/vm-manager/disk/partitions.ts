/** The partitions of a disk: its GPT (with 512-byte sectors), else its MBR's four primary entries. */
import { DiskError, type DiskReader } from './image-file';

export interface Partition {
  /** 1-based, as GRUB names it: (hd0,gpt2) is index 2 */
  index: number;
  scheme: 'gpt' | 'msdos';
  /** byte offset and length on the disk */
  start: number;
  size: number;
  /** GPT: the type GUID, upper case; MBR: the type byte as two hex digits */
  type: string;
}

export const ESP_GUID = 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B';

function guidText(b: Buffer): string {
  const h = b.toString('hex');
  const le = (s: string) => s.match(/../g)!.reverse().join('');
  return `${le(h.slice(0, 8))}-${le(h.slice(8, 12))}-${le(h.slice(12, 16))}-${h.slice(16, 20)}-${h.slice(20)}`.toUpperCase();
}

export function partitions(disk: DiskReader): Partition[] {
  const lba1 = disk.read(512, 512);
  if (lba1.toString('latin1', 0, 8) === 'EFI PART') {
    const entriesLba = Number(lba1.readBigUInt64LE(72));
    const count = lba1.readUInt32LE(80);
    const entrySize = lba1.readUInt32LE(84);
    if (count > 1024 || entrySize < 128 || entrySize > 4096) throw new DiskError(`the GPT claims ${count} entries of ${entrySize} bytes`);
    const table = disk.read(entriesLba * 512, count * entrySize);
    const out: Partition[] = [];
    for (let i = 0; i < count; i++) {
      const e = table.subarray(i * entrySize, (i + 1) * entrySize);
      if (e.length < 56 || e.subarray(0, 16).every((b) => b === 0)) continue;
      const first = Number(e.readBigUInt64LE(32));
      const last = Number(e.readBigUInt64LE(40));
      out.push({ index: i + 1, scheme: 'gpt', start: first * 512, size: (last - first + 1) * 512, type: guidText(e.subarray(0, 16)) });
    }
    return out;
  }
  const mbr = disk.read(0, 512);
  if (mbr[510] !== 0x55 || mbr[511] !== 0xaa) return [];
  const out: Partition[] = [];
  for (let i = 0; i < 4; i++) {
    const e = mbr.subarray(446 + i * 16, 446 + (i + 1) * 16);
    const type = e[4]!;
    const first = e.readUInt32LE(8);
    const sectors = e.readUInt32LE(12);
    if (type === 0 || type === 0xee || sectors === 0) continue;
    out.push({ index: i + 1, scheme: 'msdos', start: first * 512, size: sectors * 512, type: type.toString(16).padStart(2, '0') });
  }
  return out;
}

/** Reads within one partition. */
export function partitionReader(disk: DiskReader, p: Partition): (offset: number, length: number) => Buffer {
  return (offset, length) => {
    if (offset < 0 || offset + length > p.size)
      throw new DiskError(`a read of ${length} bytes at ${offset} runs past partition ${p.index} (${p.size} bytes)`);
    return disk.read(p.start + offset, length);
  };
}
