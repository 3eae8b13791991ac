/**
 * The export writer on small disks (seconds, no bake): the OVA's layout and checksums, the OVF's
 * sizes, and Skytap's 4 TB limit refused before anything is written.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../main/services/bake/ova';
import { needs } from '../support/system';
import { tarMembers } from './support';

const skip = needs(['qemu-img', 'tar', 'xmllint']);
const dir = mkdtempSync(join(tmpdir(), 'ova-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(skip !== null)('OVA/OVF/VMDK export', () => {
  it("an OVA: USTAR members .ovf, .mf, .vmdk in order; SHA256 lines verify; OVF parses, names the VMDK's size and capacity", async () => {
    const disk = join(dir, 'd.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
    const out = join(dir, 'ova');
    execFileSync('mkdir', [out]);
    const files = await writeExport({ name: 'tiny', disk, capacityBytes: 64 * 1024 ** 2, format: 'ova', dir: out });
    expect(files.map((f) => f.path)).toEqual([join(out, 'tiny.ova')]);
    expect(readdirSync(out)).toEqual(['tiny.ova']);
    const m = tarMembers(join(out, 'tiny.ova'));
    expect(m.map((x) => x.name)).toEqual(['tiny.ovf', 'tiny.mf', 'tiny-disk1.vmdk']);
    expect(m.every((x) => x.magic === 'ustar\0' && x.version === '00')).toBe(true);
    execFileSync('tar', ['-xf', join(out, 'tiny.ova'), '-C', out]);
    for (const line of readFileSync(join(out, 'tiny.mf'), 'utf8').trimEnd().split('\n')) {
      const [, f, hex] = /^SHA256\((.+)\)= ([0-9a-f]{64})$/.exec(line)!;
      expect(
        createHash('sha256')
          .update(readFileSync(join(out, f!)))
          .digest('hex'),
      ).toBe(hex);
    }
    execFileSync('xmllint', ['--noout', join(out, 'tiny.ovf')]);
    const ovf = readFileSync(join(out, 'tiny.ovf'), 'utf8');
    expect(ovf).toContain(`ovf:size="${m[2]!.size}"`);
    expect(ovf).toContain(`ovf:capacity="${64 * 1024 ** 2}"`);
    expect(readFileSync(join(out, 'tiny-disk1.vmdk')).readUInt32LE(4)).toBe(3);
  });

  it('an OVF: three files, each with the sha256 of its bytes on disk (the VMDK hashed once, for the manifest)', async () => {
    const disk = join(dir, 'o.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
    const out = join(dir, 'ovf');
    execFileSync('mkdir', [out]);
    const files = await writeExport({ name: 'tiny', disk, capacityBytes: 64 * 1024 ** 2, format: 'ovf', dir: out });
    expect(files.map((f) => f.path)).toEqual(['tiny.ovf', 'tiny.mf', 'tiny-disk1.vmdk'].map((f) => join(out, f)));
    for (const f of files) expect(f.sha256, f.path).toBe(createHash('sha256').update(readFileSync(f.path)).digest('hex'));
    const mf = readFileSync(join(out, 'tiny.mf'), 'utf8');
    expect(mf).toContain(`SHA256(tiny-disk1.vmdk)= ${files[2]!.sha256}`);
    expect(mf).toContain(`SHA256(tiny.ovf)= ${files[0]!.sha256}`);
  });

  it("a 5 TB disk: refused with Skytap's limit, nothing written", async () => {
    const disk = join(dir, 'huge.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '5T']);
    const out = mkdtempSync(join(dir, 'huge-'));
    await expect(writeExport({ name: 'huge', disk, capacityBytes: 5 * 1024 ** 4, format: 'ova', dir: out })).rejects.toThrow(
      /Skytap imports VMs under 4 TB/,
    );
    expect(readdirSync(out)).toEqual([]);
  });
});
