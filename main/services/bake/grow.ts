/**
 * `sizeGib`: grows the working copy with virt-resize (libguestfs), expanding the last partition
 * and its file system. Shrinking is refused: it can lose data.
 */
import { renameSync, rmSync } from 'node:fs';
import { AppError } from '../../../shared/contract/errors';
import { run, runGuestfs } from './tools';

export async function growDisk(disk: string, gib: number, signal?: AbortSignal): Promise<void> {
  const info = JSON.parse(await run('qemu-img', ['info', '--output=json', disk], { signal })) as { 'virtual-size': number };
  const want = gib * 1024 ** 3;
  if (want < info['virtual-size']) {
    throw new AppError(
      'invalid_request',
      `sizeGib ${gib} is smaller than the image (${Math.ceil(info['virtual-size'] / 1024 ** 3)} GiB): a bake only grows disks`,
    );
  }
  if (want === info['virtual-size']) return;
  const parts = (await runGuestfs('virt-filesystems', ['-a', disk, '--partitions'], { signal, what: 'virt-filesystems' }))
    .split('\n')
    .filter((l) => /^\/dev\/sd[a-z]\d+$/.test(l));
  const last = parts.sort((a, b) => Number(/\d+$/.exec(a)?.[0]) - Number(/\d+$/.exec(b)?.[0])).pop();
  if (!last) throw new AppError('invalid_request', 'the image has no partition to grow: bake it at its own size');
  const out = `${disk}.grown`;
  try {
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', out, String(want)], { signal });
    await runGuestfs('virt-resize', ['--expand', last, disk, out], {
      signal,
      what: 'virt-resize',
      hint: `growing ${last} to fill ${gib} GiB`,
    });
    renameSync(out, disk);
  } finally {
    rmSync(out, { force: true });
  }
}
