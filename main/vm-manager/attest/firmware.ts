/**
 * What the host's firmware parts will measure, read from their files (no boot): the OVMF code
 * file's firmware volumes (PCR 0), the vars template's Secure Boot variables (PCR 7) and the EFI
 * driver of the NIC's option ROM that QEMU hands the guest (PCR 2). docs/attestation-verifier.md has the
 * event table these feed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { authenticodeSha256 } from './pe';
import { findTool } from '../finders';

export class FirmwareError extends Error {}

const guid = (s: string) => {
  const h = s.replace(/-/g, '');
  const b = Buffer.from(h, 'hex');
  // EFI GUIDs are stored with the first three fields little-endian.
  return Buffer.concat([
    Buffer.from(b.subarray(0, 4)).reverse(),
    Buffer.from(b.subarray(4, 6)).reverse(),
    Buffer.from(b.subarray(6, 8)).reverse(),
    b.subarray(8),
  ]);
};
const LZMA_SECTION = guid('EE4E5898-3914-4259-9D6E-DC7BD79403CF');
const EFI_SECTION_GUID_DEFINED = 0x02;
const EFI_SECTION_FIRMWARE_VOLUME_IMAGE = 0x17;
const EFI_FV_FILETYPE_PEI_CORE = 0x04;

export interface FirmwareVolume {
  length: number;
  sha256: string;
  /** a PEI volume: its modules run in place from the measured copy and write their globals before it is measured */
  pei: boolean;
}

/** File types of the FFS files in one firmware volume (EFI_FIRMWARE_VOLUME_HEADER + EFI_FFS_FILE_HEADERs). */
function ffsTypes(fv: Buffer): number[] {
  if (fv.length < 0x38 || fv.toString('latin1', 40, 44) !== '_FVH')
    throw new FirmwareError('a firmware volume image without the _FVH signature');
  const types: number[] = [];
  let off = fv.readUInt16LE(48);
  while (off + 24 <= fv.length) {
    const size = fv.readUIntLE(off + 20, 3);
    if (size === 0xffffff && fv.readUInt32LE(off) === 0xffffffff) break; // erased space: no more files
    const large = (fv[off + 19]! & 0x01) !== 0; // FFS_ATTRIB_LARGE_FILE: the size follows the header
    const len = large ? Number(fv.readBigUInt64LE(off + 24)) : size;
    if (len < 24 || off + len > fv.length) break;
    types.push(fv[off + 18]!);
    off = (off + len + 7) & ~7;
  }
  return types;
}

/**
 * The volumes OVMF decompresses from its FVMAIN_COMPACT and measures as
 * EV_EFI_PLATFORM_FIRMWARE_BLOB, in order (PEIFV, DXEFV on Debian's OVMF). The LZMA section is
 * decompressed by `xz --format=lzma` (EDK2's LzmaCompress writes the .lzma format).
 */
export function firmwareVolumes(codeFile: string): FirmwareVolume[] {
  const img = readFileSync(codeFile);
  for (let at = img.indexOf(LZMA_SECTION); at >= 4; at = img.indexOf(LZMA_SECTION, at + 1)) {
    const sec = at - 4;
    if (img[sec + 3] !== EFI_SECTION_GUID_DEFINED) continue;
    const size = img.readUIntLE(sec, 3);
    const dataOffset = img.readUInt16LE(at + 16);
    if (size === 0xffffff || sec + size > img.length || dataOffset < 24 || dataOffset >= size) continue;
    const xz = findTool('xz');
    if (!xz) throw new FirmwareError("xz is missing (it unpacks the firmware's volumes): install it with `apt-get install xz-utils`");
    let out: Buffer;
    try {
      out = execFileSync(xz, ['--format=lzma', '--decompress', '--stdout'], {
        input: img.subarray(sec + dataOffset, sec + size),
        maxBuffer: 256 * 1024 * 1024,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (e) {
      throw new FirmwareError(
        `cannot unpack the firmware volumes of ${codeFile}: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`,
      );
    }
    const volumes: FirmwareVolume[] = [];
    for (let off = 0; off + 4 <= out.length;) {
      const len = out.readUIntLE(off, 3);
      if (len < 4 || len === 0xffffff) break;
      if (out[off + 3] === EFI_SECTION_FIRMWARE_VOLUME_IMAGE) {
        const body = out.subarray(off + 4, off + len);
        const fv = body.subarray(body.indexOf('_FVH', 0, 'latin1') - 40);
        const fvLength = Number(fv.readBigUInt64LE(32));
        const image = fv.subarray(0, fvLength);
        const types = ffsTypes(image);
        volumes.push({
          length: fvLength,
          sha256: createHash('sha256').update(image).digest('hex'),
          pei: types.includes(EFI_FV_FILETYPE_PEI_CORE),
        });
      }
      off = (off + len + 3) & ~3;
    }
    if (volumes.length) return volumes;
  }
  throw new FirmwareError(`${codeFile} holds no LZMA-compressed firmware volumes: not an OVMF build this verifier can predict`);
}

/** The variables OVMF measures into PCR 7 at boot, in its order, with the GUID it measures each under. */
export const SECURE_BOOT_VARIABLES: { name: string; guid: string }[] = [
  { name: 'SecureBoot', guid: '8be4df61-93ca-11d2-aa0d-00e098032b8c' },
  { name: 'PK', guid: '8be4df61-93ca-11d2-aa0d-00e098032b8c' },
  { name: 'KEK', guid: '8be4df61-93ca-11d2-aa0d-00e098032b8c' },
  { name: 'db', guid: 'd719b2cb-3d3a-4596-a3bc-dad00e67656f' },
  { name: 'dbx', guid: 'd719b2cb-3d3a-4596-a3bc-dad00e67656f' },
];

/**
 * The Secure Boot variables of a vars template (an authenticated variable store inside an FV):
 * name → data (hex; "" when absent). SecureBoot itself is not stored: OVMF sets it to 01 when a
 * PK is enrolled (and Secure Boot was not turned off), so a template with a PK is reported with
 * SecureBoot 01.
 */
export function secureBootVariables(varsFile: string): Record<string, string> {
  const fv = readFileSync(varsFile);
  if (fv.length < 0x48 || fv.toString('latin1', 40, 44) !== '_FVH')
    throw new FirmwareError(`${varsFile} is not a firmware volume (no _FVH signature)`);
  const store = fv.readUInt16LE(48);
  const storeSize = fv.readUInt32LE(store + 16);
  const end = Math.min(fv.length, store + storeSize);
  const found: Record<string, string> = {};
  for (let off = store + 28; off + 60 <= end;) {
    if (fv.readUInt16LE(off) !== 0x55aa) break;
    const state = fv[off + 2]!;
    const nameSize = fv.readUInt32LE(off + 36);
    const dataSize = fv.readUInt32LE(off + 40);
    const vendor = fv.subarray(off + 44, off + 60);
    const name = fv
      .subarray(off + 60, off + 60 + nameSize)
      .toString('utf16le')
      .replace(/\0+$/, '');
    const data = fv.subarray(off + 60 + nameSize, off + 60 + nameSize + dataSize);
    // VAR_ADDED (0x3f), or added and in deleted transition (0x3e): still the live value.
    const want = SECURE_BOOT_VARIABLES.find((v) => v.name === name && guid(v.guid).equals(vendor));
    if (want && (state === 0x3f || state === 0x3e)) found[name] = data.toString('hex');
    off = (off + 60 + nameSize + dataSize + 3) & ~3;
  }
  const out: Record<string, string> = {};
  for (const v of SECURE_BOOT_VARIABLES) out[v.name] = v.name === 'SecureBoot' ? (found.PK ? '01' : '00') : (found[v.name] ?? '');
  return out;
}

/** UEFI_VARIABLE_DATA as OVMF measures a Secure Boot variable into PCR 7 (its digest is the sha256 of these bytes). */
export function variableEventData(name: string, data: Buffer): Buffer {
  const v = SECURE_BOOT_VARIABLES.find((x) => x.name === name);
  if (!v) throw new FirmwareError(`${name} is not a Secure Boot variable`);
  const head = Buffer.alloc(32);
  guid(v.guid).copy(head, 0);
  head.writeBigUInt64LE(BigInt(name.length), 16);
  head.writeBigUInt64LE(BigInt(data.length), 24);
  return Buffer.concat([head, Buffer.from(name, 'utf16le'), data]);
}

/**
 * Authenticode digests of the uncompressed EFI drivers in a PCI option ROM (what OVMF measures as
 * EV_EFI_BOOT_SERVICES_DRIVER when it loads them). A compressed EFI image is refused: its digest
 * is of the decompressed driver, which this verifier does not unpack.
 */
export function optionRomDrivers(romFile: string): string[] {
  const rom = readFileSync(romFile);
  const out: string[] = [];
  for (let off = 0; off + 0x1a <= rom.length;) {
    if (rom.readUInt16LE(off) !== 0xaa55) break;
    const pcir = off + rom.readUInt16LE(off + 0x18);
    if (pcir + 0x18 > rom.length || rom.toString('latin1', pcir, pcir + 4) !== 'PCIR') break;
    const length = rom.readUInt16LE(pcir + 0x10) * 512;
    const codeType = rom[pcir + 0x14]!;
    const last = (rom[pcir + 0x15]! & 0x80) !== 0;
    if (codeType === 3 && rom.readUInt32LE(off + 4) === 0x0ef1) {
      if (rom.readUInt16LE(off + 0xc) !== 0)
        throw new FirmwareError(`${romFile} holds a compressed EFI driver; its measurement cannot be predicted from the file`);
      const initSize = rom.readUInt16LE(off + 2) * 512;
      const peAt = off + rom.readUInt16LE(off + 0x16);
      out.push(authenticodeSha256(rom.subarray(peAt, off + initSize)));
    }
    if (last || length === 0) break;
    off += length;
  }
  return out;
}

/**
 * The option ROM QEMU loads for a device, found in QEMU's own firmware search path
 * (`qemu-system-x86_64 -L help`), or null when QEMU or the file is not found.
 */
export function qemuRomFile(name: string): string | null {
  const qemu = findTool('qemu-system-x86_64');
  if (!qemu) return null;
  let dirs: string[];
  try {
    dirs = execFileSync(qemu, ['-L', 'help'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  } catch {
    return null;
  }
  for (const d of dirs) if (existsSync(join(d, name))) return join(d, name);
  return null;
}

/** sha256 of a file (the firmware file's identity in the references). */
export function fileSha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}
