/**
 * A small USTAR writer and reader for the lab's test images (docker-archive tars), so building one
 * needs neither docker nor a tar program. Deterministic: fixed mtime, owners as given, entries in
 * the order given. Names up to 100 bytes (the lab's are short).
 */

export interface TarEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink';
  /** permission bits, e.g. 0o755 */
  mode: number;
  uid?: number;
  gid?: number;
  data?: Buffer;
  /** symlink target */
  linkname?: string;
}

/** 2000-01-01T00:00:00Z: a fixed mtime, so equal inputs give equal bytes. */
const MTIME = 946684800;

function octal(n: number, width: number): string {
  return `${n.toString(8).padStart(width - 1, '0')}\0`;
}

function header(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  const name = e.type === 'dir' && !e.name.endsWith('/') ? `${e.name}/` : e.name;
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: name ${name} is over 100 bytes`);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(e.mode & 0o7777, 8), 100, 8, 'latin1');
  h.write(octal(e.uid ?? 0, 8), 108, 8, 'latin1');
  h.write(octal(e.gid ?? 0, 8), 116, 8, 'latin1');
  h.write(octal(size, 12), 124, 12, 'latin1');
  h.write(octal(MTIME, 12), 136, 12, 'latin1');
  h.write(e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2', 156, 1, 'latin1');
  if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 6, 'latin1');
  h.write('00', 263, 2, 'latin1');
  h.fill(0x20, 148, 156); // the checksum field counts as spaces
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return h;
}

export function tarBytes(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = e.type === 'file' ? (e.data ?? Buffer.alloc(0)) : Buffer.alloc(0);
    parts.push(header(e, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

export interface TarMember {
  name: string;
  type: string;
  mode: number;
  uid: number;
  gid: number;
  linkname: string;
  data: Buffer;
}

/** The members of a USTAR (or GNU/POSIX-plain) tar held in memory. */
export function readTar(buf: Buffer): TarMember[] {
  const out: TarMember[] = [];
  let off = 0;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (a: number, n: number) =>
      h
        .subarray(a, a + n)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const num = (a: number, n: number) => parseInt(str(a, n).trim() || '0', 8);
    const size = num(124, 12);
    const prefix = str(345, 155);
    const name = str(0, 100);
    out.push({
      name: prefix ? `${prefix}/${name}` : name,
      type: str(156, 1) || '0',
      mode: num(100, 8),
      uid: num(108, 8),
      gid: num(116, 8),
      linkname: str(157, 100),
      data: buf.subarray(off + 512, off + 512 + size),
    });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
