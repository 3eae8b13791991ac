/**
 * Issue 33 item 1: an image that names other files (VMDK descriptor extents, a sparse VMDK that
 * defers to an embedded descriptor or names a parent, a qcow2 backing file or data-file, any of
 * them inside an OVA) is refused by the bake's source and by the vm-manager's image import: one
 * check (main/lib/image-refs.ts), images made by qemu-img, and no host byte reaches an output.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { diskOf, workingCopy } from '../../main/services/bake/source';
import { importImage } from '../../main/vm-manager/image-import';
import { listImages } from '../../main/vm-manager/images';
import { headerReferences, infoReferences } from '../../main/lib/image-refs';
import { needs } from '../support/system';
import { tempDir } from '../support/temp-dirs';

const skip = needs(['qemu-img', 'tar']);
const MARK = 'HOST-SECRET-7f3a';

/** A 1 MiB raw "disk" (MBR signature, so qemu-img and both checks take it for a disk) holding MARK. */
function hostSecret(file: string): void {
  const b = Buffer.alloc(1024 * 1024);
  b.write(MARK, 0, 'latin1');
  b[510] = 0x55;
  b[511] = 0xaa;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, b);
}

function descriptor(extent: string, header = true): string {
  return [
    ...(header ? ['# Disk DescriptorFile'] : []),
    'version=1',
    'CID=fffffffe',
    'parentCID=ffffffff',
    'createType="monolithicFlat"',
    '',
    `RW 2048 FLAT "${extent}" 0`,
    '',
    'ddb.virtualHWVersion = "4"',
    '',
  ].join('\n');
}

/** A monolithic sparse VMDK from qemu-img whose embedded descriptor `patch` rewrites (and capacity, when given). */
function patchedSparse(file: string, patch: (desc: string) => string, capacity?: bigint): void {
  execFileSync('qemu-img', ['create', '-q', '-f', 'vmdk', file, '1M']);
  const b = readFileSync(file);
  const at = Number(b.readBigUInt64LE(28)) * 512;
  const size = Number(b.readBigUInt64LE(36)) * 512;
  const desc = Buffer.from(
    patch(
      b
        .subarray(at, at + size)
        .toString('latin1')
        .replace(/\0+$/, ''),
    ),
    'latin1',
  );
  expect(desc.length).toBeLessThan(size);
  b.fill(0, at, at + size);
  desc.copy(b, at);
  if (capacity !== undefined) b.writeBigUInt64LE(capacity, 12);
  writeFileSync(file, b);
}

/** An OVA (tar: .ovf then the disk) holding `disk` as `name`. */
function ova(file: string, disk: string, name: string): void {
  const dir = tempDir('ova-src-');
  writeFileSync(
    join(dir, 'vm.ovf'),
    `<?xml version="1.0"?>\n<Envelope><References><File ovf:href="${name}" ovf:id="file1"/></References></Envelope>\n`,
  );
  execFileSync('cp', [disk, join(dir, name)]);
  execFileSync('tar', ['-cf', file, '-C', dir, 'vm.ovf', name]);
}

function qemuInfo(file: string) {
  return JSON.parse(execFileSync('qemu-img', ['info', '--output=json', file], { encoding: 'utf8' }));
}

describe.skipIf(skip !== null)('images that name host files: refused by the bake and by image import (one check)', () => {
  const root = tempDir('image-refs-');
  const sources = join(root, 'home', 'sources'); // what a bake may read
  const secret = join(root, 'home', '.ssh', 'id_ed25519'); // the host file the images aim at
  const state = join(root, 'vmm');
  let n = 0;
  const work = () => {
    const w = join(root, 'work', String(++n));
    mkdirSync(w, { recursive: true });
    return w;
  };
  const bad: Record<string, string> = {};

  beforeAll(() => {
    mkdirSync(join(sources, 'deep'), { recursive: true });
    mkdirSync(state, { recursive: true });
    hostSecret(secret);
    const rel = relative(join(sources, 'deep'), secret); // ../../.ssh/id_ed25519
    expect(rel.startsWith('../../')).toBe(true);
    bad['descriptor, relative extent (../../.ssh/id_ed25519)'] = join(sources, 'deep', 'rel.vmdk');
    writeFileSync(bad['descriptor, relative extent (../../.ssh/id_ed25519)']!, descriptor(rel));
    bad['descriptor, absolute extent'] = join(sources, 'abs.vmdk');
    writeFileSync(bad['descriptor, absolute extent']!, descriptor(secret));
    bad['descriptor without its "# Disk DescriptorFile" line'] = join(sources, 'bare.vmdk');
    writeFileSync(bad['descriptor without its "# Disk DescriptorFile" line']!, descriptor(secret, false));
    bad['sparse VMDK with capacity 0 and a descriptor naming the host file'] = join(sources, 'deep', 'embedded.vmdk');
    patchedSparse(bad['sparse VMDK with capacity 0 and a descriptor naming the host file']!, () => descriptor(rel), 0n);
    bad['sparse VMDK naming a parent (parentFileNameHint)'] = join(sources, 'parent.vmdk');
    // the parent is opened as a VMDK: another disk on the host (made from the secret), its CID named
    const parent = join(root, 'home', 'private', 'disk.vmdk');
    mkdirSync(dirname(parent));
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'vmdk', secret, parent]);
    const cid = /^CID=(\w+)$/m.exec(readFileSync(parent, 'latin1'))?.[1];
    patchedSparse(bad['sparse VMDK naming a parent (parentFileNameHint)']!, (d) =>
      d.replace('parentCID=ffffffff', `parentCID=${cid}\nparentFileNameHint="${parent}"`),
    );
    bad['qcow2 with a data-file'] = join(sources, 'datafile.qcow2');
    // qemu-img create truncates the data file it names: aim it at a copy, then fill that with the secret
    const dataFile = join(root, 'home', '.ssh', 'data.raw');
    execFileSync('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-o',
      `data_file=${dataFile},data_file_raw=on`,
      bad['qcow2 with a data-file']!,
      '1M',
    ]);
    hostSecret(dataFile);
    bad['qcow2 with a backing file'] = join(sources, 'backed.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', secret, '-F', 'raw', bad['qcow2 with a backing file']!]);
    // inside an OVA the disk lands in the bake's work dir (<root>/work/<n>/): ../../home/.ssh/… from there
    const inOva = join(root, 'ova-disk.vmdk');
    writeFileSync(inOva, descriptor('../../home/.ssh/id_ed25519'));
    bad['OVA holding a descriptor VMDK'] = join(sources, 'desc.ova');
    ova(bad['OVA holding a descriptor VMDK']!, inOva, 'disk1.vmdk');
    const inOva2 = join(root, 'ova-embedded.vmdk');
    patchedSparse(inOva2, () => descriptor('../../home/.ssh/id_ed25519'), 0n);
    bad['OVA holding a sparse VMDK that defers to its descriptor'] = join(sources, 'embedded.ova');
    ova(bad['OVA holding a sparse VMDK that defers to its descriptor']!, inOva2, 'disk1.vmdk');
  });

  it('qemu-img itself would copy the host file: each crafted image reads as the secret (the threat is real)', () => {
    for (const [what, file] of Object.entries(bad)) {
      if (file.endsWith('.ova')) continue;
      const out = join(root, `leak-${++n}.raw`);
      execFileSync('qemu-img', ['convert', '-O', 'raw', file, out]);
      expect(readFileSync(out).subarray(0, MARK.length).toString('latin1'), what).toBe(MARK);
    }
  });

  it("bake.start's source refuses each, before making a working copy", async () => {
    for (const [what, file] of Object.entries(bad)) {
      const out = join(root, `bake-${++n}.qcow2`);
      const attempt = (async () => workingCopy(await diskOf(file, work()), out))();
      await expect(attempt, what).rejects.toThrow(/names files outside itself .*a bake reads only the image file itself/);
      expect(existsSync(out), what).toBe(false);
    }
  });

  it("the vm-manager's image import refuses each, and stores nothing", async () => {
    for (const [what, file] of Object.entries(bad)) {
      if (file.endsWith('.ova')) continue; // import takes qcow2, raw or vmdk
      await expect(importImage(state, file, { name: `bad-${++n}` }), what).rejects.toThrow(/names external files/);
    }
    expect(listImages(state)).toEqual([]);
  });

  it('both passes see each: the header before qemu-img opens anything, and qemu-img info after', () => {
    for (const [what, file] of Object.entries(bad)) {
      if (file.endsWith('.ova')) continue;
      expect(headerReferences(file), what).not.toEqual([]);
      expect(infoReferences(file, qemuInfo(file)), what).not.toEqual([]);
    }
  });

  it('a descriptor naming a FIFO is refused without qemu-img opening it (it would wait on the FIFO forever)', async () => {
    const fifo = join(root, 'home', 'fifo');
    execFileSync('mkfifo', [fifo]);
    const file = join(sources, 'fifo.vmdk');
    writeFileSync(file, descriptor(fifo, false));
    await expect(workingCopy(file, join(root, 'fifo.qcow2'))).rejects.toThrow(/its extents \(a VMDK text descriptor\)/);
    await expect(importImage(state, file, { name: 'fifo' })).rejects.toThrow(/names external files/);
  });

  it('an OVF whose disk beside it is a link out of the allowed folders: refused', async () => {
    const dir = join(sources, 'linked');
    mkdirSync(dir);
    writeFileSync(join(dir, 'vm.ovf'), '<Envelope><References><File ovf:href="disk1.vmdk"/></References></Envelope>\n');
    symlinkSync(secret, join(dir, 'disk1.vmdk'));
    await expect(diskOf(join(dir, 'vm.ovf'), work())).rejects.toThrow(/not a plain file/);
  });

  it('self-contained images still pass both: qcow2, raw, monolithic sparse VMDK, an OVA with a streamOptimized VMDK', async () => {
    const raw = join(root, 'ok.raw');
    hostSecret(raw); // a raw disk of the user's own: its bytes are the image
    const good: Record<string, string> = { raw };
    good.qcow2 = join(sources, 'ok.qcow2');
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, good.qcow2]);
    good.vmdk = join(sources, 'ok.vmdk');
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'vmdk', raw, good.vmdk]);
    const stream = join(root, 'stream.vmdk');
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'vmdk', '-o', 'subformat=streamOptimized', raw, stream]);
    good.ova = join(sources, 'ok.ova');
    ova(good.ova, stream, 'disk1.vmdk');
    for (const [what, file] of Object.entries(good)) {
      const out = join(root, `good-${what}.qcow2`);
      const facts = await workingCopy(await diskOf(file, work()), out);
      expect(facts.virtualSize, what).toBe(1024 * 1024);
      expect(existsSync(out), what).toBe(true);
      if (what !== 'ova') expect((await importImage(state, file, { name: `good-${what}` })).sourceFormat, what).toBe(what);
    }
  });
});
