/**
 * Image import (issue 10 item 8): a file that names other host files is refused (a VMDK descriptor
 * whose extents point elsewhere, a qcow2 with an external data-file), and a large sparse raw image
 * imports because nothing reads it whole into memory.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importImage } from '../../main/vm-manager/image-import';
import { listImages } from '../../main/vm-manager/images';
import { needs } from '../support/system';
import { rawDisk } from './support';

const skip = needs(['qemu-img']);

describe.skipIf(skip !== null)('image import refuses external references and streams big files', () => {
  let root: string;
  let state: string;
  let outside: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'vmm-import-'));
    state = join(root, 'state');
    outside = join(root, 'host-files');
    mkdirSync(state);
    mkdirSync(outside);
    rawDisk(join(outside, 'host-secret.raw'), 1024 * 1024);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a VMDK descriptor whose extent names a host file is refused and nothing is created', async () => {
    const desc = join(state, 'evil.vmdk');
    writeFileSync(
      desc,
      [
        '# Disk DescriptorFile',
        'version=1',
        'CID=fffffffe',
        'parentCID=ffffffff',
        'createType="monolithicFlat"',
        '',
        `RW 2048 FLAT "${join(outside, 'host-secret.raw')}" 0`,
        '',
        'ddb.virtualHWVersion = "4"',
        '',
      ].join('\n'),
    );
    await expect(importImage(state, desc, { name: 'evil-vmdk' })).rejects.toThrow(/external (file|reference)/);
    expect(listImages(state).map((i) => i.name)).not.toContain('evil-vmdk');
    expect(existsSync(join(state, 'images', 'evil-vmdk'))).toBe(false);
  });

  it('a qcow2 with an external data-file is refused', async () => {
    const img = join(state, 'datafile.qcow2');
    execFileSync('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-o',
      `data_file=${join(outside, 'host-secret.raw')},data_file_raw=on`,
      img,
      '1M',
    ]);
    await expect(importImage(state, img, { name: 'evil-qcow2' })).rejects.toThrow(/external (file|reference)/);
    expect(existsSync(join(state, 'images', 'evil-qcow2'))).toBe(false);
  });

  it('a monolithic sparse VMDK (extent inside the file itself) still imports', async () => {
    const src = join(state, 'ok.raw');
    rawDisk(src, 4 * 1024 * 1024);
    const vmdk = join(state, 'ok.vmdk');
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'vmdk', src, vmdk]);
    expect((await importImage(state, vmdk, { name: 'ok-vmdk' })).sourceFormat).toBe('vmdk');
  });

  it('a sparse 3 GiB raw image imports (hash and sniff stream; nothing read whole)', async () => {
    const big = join(state, 'big.raw');
    rawDisk(big, 3 * 1024 ** 3);
    const info = await importImage(state, big, { name: 'big-raw' });
    expect(info.virtualSizeBytes).toBe(3 * 1024 ** 3);
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
  }, 120_000);
});
