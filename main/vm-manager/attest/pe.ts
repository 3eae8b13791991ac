/**
 * The digest UEFI firmware measures for a PE/COFF image it loads (EV_EFI_BOOT_SERVICES_APPLICATION
 * and _DRIVER): the Authenticode hash, as EDK2's DxeTpm2MeasureBootLib computes it — the headers
 * without the checksum and the certificate-table entry, the sections in file order, then any data
 * after them except the certificate table.
 */
import { createHash } from 'node:crypto';

export class PeError extends Error {}

const IMAGE_DIRECTORY_ENTRY_SECURITY = 4;

/** sha256 Authenticode digest (hex) of a PE/COFF image. Throws PeError when it is not one. */
export function authenticodeSha256(img: Buffer): string {
  const u16 = (o: number) => {
    if (o + 2 > img.length) throw new PeError(`not a PE image: it ends at byte ${img.length}, before offset ${o}`);
    return img.readUInt16LE(o);
  };
  const u32 = (o: number) => {
    if (o + 4 > img.length) throw new PeError(`not a PE image: it ends at byte ${img.length}, before offset ${o}`);
    return img.readUInt32LE(o);
  };
  if (u16(0) !== 0x5a4d) throw new PeError('not a PE image: no "MZ" at its start');
  const pe = u32(0x3c);
  if (u32(pe) !== 0x00004550) throw new PeError(`not a PE image: no "PE\\0\\0" signature at offset ${pe}`);
  const sections = u16(pe + 6);
  const optSize = u16(pe + 20);
  const opt = pe + 24;
  const magic = u16(opt);
  if (magic !== 0x10b && magic !== 0x20b) throw new PeError(`not a PE image: optional header magic 0x${magic.toString(16)}`);
  const checksum = opt + 64;
  const dirs = opt + (magic === 0x10b ? 96 : 112);
  const rvaCount = u32(dirs - 4);
  const headersSize = u32(opt + 60);
  if (headersSize > img.length || headersSize < dirs) throw new PeError(`not a PE image: SizeOfHeaders ${headersSize} is outside the file`);
  const h = createHash('sha256');
  h.update(img.subarray(0, checksum));
  let certSize = 0;
  if (rvaCount <= IMAGE_DIRECTORY_ENTRY_SECURITY) {
    h.update(img.subarray(checksum + 4, headersSize));
  } else {
    const cert = dirs + IMAGE_DIRECTORY_ENTRY_SECURITY * 8;
    h.update(img.subarray(checksum + 4, cert));
    h.update(img.subarray(cert + 8, headersSize));
    certSize = u32(cert + 4);
  }
  const table = opt + optSize;
  const raw: { ptr: number; size: number }[] = [];
  for (let i = 0; i < sections; i++) {
    const s = table + 40 * i;
    const size = u32(s + 16);
    const ptr = u32(s + 20);
    if (size === 0) continue;
    if (ptr + size > img.length) throw new PeError(`section ${i} (${size} bytes at ${ptr}) runs past the end of the image`);
    raw.push({ ptr, size });
  }
  raw.sort((a, b) => a.ptr - b.ptr);
  let hashed = headersSize;
  for (const s of raw) {
    h.update(img.subarray(s.ptr, s.ptr + s.size));
    hashed += s.size;
  }
  if (img.length > hashed + certSize) h.update(img.subarray(hashed, img.length - certSize));
  return h.digest('hex');
}
