/** A minimal writer for the cpio "newc" format the Linux kernel unpacks as an initramfs. */

export interface CpioEntry {
  path: string; // without a leading slash
  mode: number; // full st_mode, type bits included
  data?: Buffer; // file contents, or the target of a symlink
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

export const cpioDir = (path: string): CpioEntry => ({ path, mode: S_IFDIR | 0o755 });
export const cpioFile = (path: string, data: Buffer, perm = 0o644): CpioEntry => ({ path, mode: S_IFREG | perm, data });
export const cpioLink = (path: string, target: string): CpioEntry => ({ path, mode: S_IFLNK | 0o777, data: Buffer.from(target) });

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function pad4(len: number): Buffer {
  return Buffer.alloc((4 - (len % 4)) % 4);
}

/** Serialises entries in the given order, with fixed owners and mtimes so equal input gives equal bytes. */
export function writeCpio(entries: CpioEntry[]): Buffer {
  const parts: Buffer[] = [];
  let ino = 1;
  const one = (name: string, mode: number, data: Buffer, nlink: number) => {
    const nameBuf = Buffer.from(name + '\0');
    const header =
      '070701' +
      hex8(ino++) +
      hex8(mode) +
      hex8(0) +
      hex8(0) +
      hex8(nlink) +
      hex8(0) +
      hex8(data.length) +
      hex8(0) +
      hex8(0) +
      hex8(0) +
      hex8(0) +
      hex8(nameBuf.length) +
      hex8(0);
    const head = Buffer.concat([Buffer.from(header, 'ascii'), nameBuf]);
    parts.push(head, pad4(head.length), data, pad4(data.length));
  };
  for (const e of entries) {
    if (e.path.startsWith('/') || e.path.includes('..')) throw new Error(`cpio: bad path ${e.path}`);
    one(e.path, e.mode, e.data ?? Buffer.alloc(0), (e.mode & S_IFDIR) === S_IFDIR ? 2 : 1);
  }
  one('TRAILER!!!', 0, Buffer.alloc(0), 1);
  return Buffer.concat(parts);
}
