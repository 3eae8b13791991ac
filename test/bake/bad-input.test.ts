/**
 * Bad input and cancel: each a clear error, and nothing left behind (no work dir, no file under
 * the vm-manager's state dir, no image, no VM, no baked entry, no tool process).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAKE_STAGES, type BakeArgs, type BakeStage } from '../../shared/contract/bake';
import { debianBase } from '../../main/services/bake/debian';
import { guestfsEnv } from '../../main/services/bake/tools';
import { controlNodeDisk } from '../lab/control-node-image';
import { until } from '../vm-manager/support';
import { bakeSkip, bakeWorld, CACHE, leftovers, type BakeWorld } from './support';

const skip = bakeSkip();

/**
 * guestfish with a script, without blocking the event loop: the vm-manager runs in this process,
 * and a client socket kept alive across a blocked loop is reset by the server the moment it wakes.
 */
function guestfish(script: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('guestfish', [], { env: guestfsEnv(), stdio: ['pipe', 'inherit', 'inherit'] });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`guestfish exited ${code}`))));
    p.stdin.end(script);
  });
}

async function expectRefused(w: BakeWorld, args: BakeArgs, code: string, message: RegExp) {
  const id = w.svc.start(args);
  const job = await w.jobs.wait(id);
  expect(job.state).toBe('failed');
  expect(job.error?.code, job.error?.message).toBe(code);
  expect(job.error?.message).toMatch(message);
  expect(await leftovers(w, args.name)).toEqual([]);
  return job;
}

describe.skipIf(skip !== null)('bake.start: bad input and cancel leave nothing', () => {
  let w: BakeWorld;
  let base = '';
  let baked = '';
  let win = '';
  let full = '';

  beforeAll(async () => {
    w = await bakeWorld();
    // the cached Debian base (built here when this file runs first), as a plain source image
    const tmp = mkdtempSync(join(w.home, 'base-'));
    const b = await debianBase({ codename: 'bookworm', cacheDir: join(CACHE, 'debian'), workDir: tmp, log: () => {} });
    base = join(w.sources, 'debian.qcow2');
    win = join(w.sources, 'win.qcow2');
    full = join(w.sources, 'full.qcow2');
    copyFileSync(b.disk, base);
    rmSync(tmp, { recursive: true, force: true });
    // An already baked Debian (the lab's cached control-node image, baked here when its inputs
    // changed): the source of the register and proof cancels, which then reach their stage after a
    // bake stage with nothing to install (~20 s) instead of installing open-vm-tools (~50 s).
    const cn = await controlNodeDisk();
    baked = join(w.sources, 'baked.qcow2');
    try {
      linkSync(cn.disk, baked); // the bake never changes its source
    } catch {
      await copyFile(cn.disk, baked);
    }
    // The Windows disk and the full one, made in one appliance launch (~20 s each under TCG): a
    // 128 MiB NTFS disk with \Windows\System32 and no registry, and a copy of the base whose / is
    // filled up to 8 MiB.
    copyFileSync(base, full);
    await guestfish(
      [
        `disk-create ${win} qcow2 134217728`,
        `add ${win} format:qcow2`,
        `add ${full} format:qcow2`,
        'run',
        'part-disk /dev/sda mbr',
        'mkfs ntfs /dev/sda1',
        'mount /dev/sda1 /',
        'mkdir-p /Windows/System32/config',
        'write /Windows/System32/config/notes.txt "fake"',
        'umount-all',
        'mount /dev/sdb3 /',
        'sh "fallocate -l $(( $(stat -f -c %a /) * $(stat -f -c %S /) - 8388608 )) /filler"',
      ].join('\n') + '\n',
    );
  }, 900_000);
  afterAll(async () => {
    await w?.close();
  });

  it('a file that is not an image: refused, nothing written (and what a killed bake left is swept)', async () => {
    // a bake of a process that no longer exists (pid 2^22 + 1 is above Linux's pid_max)
    const deadWork = join(w.home, 'templates', 'work', '4194305-job');
    mkdirSync(deadWork, { recursive: true });
    mkdirSync(join(w.state, 'incoming'), { recursive: true });
    writeFileSync(join(w.state, 'incoming', '4194305-job-x.qcow2'), 'half a disk');
    writeFileSync(join(w.sources, 'notes.qcow2'), 'these are my notes, not a disk\n'.repeat(100));
    await expectRefused(
      w,
      { source: join(w.sources, 'notes.qcow2'), name: 'notes' },
      'invalid_request',
      /not a disk image: it has no MBR or GPT partition table/,
    );
  });

  it('a source outside the allowed directories (also through a symlink): refused before anything is made', async () => {
    await expectRefused(w, { source: '/etc/hostname', name: 'outside' }, 'invalid_request', /outside the directories a bake may read/);
    symlinkSync('/etc/hostname', join(w.sources, 'sneaky.qcow2'));
    await expectRefused(w, { source: join(w.sources, 'sneaky.qcow2'), name: 'sneaky' }, 'invalid_request', /\/etc\/hostname is outside/);
    await expectRefused(w, { source: join(w.sources, 'missing.ova'), name: 'missing' }, 'invalid_request', /does not exist/);
  });

  it('a Windows image (NTFS with \\Windows\\System32, no registry): refused as Windows', async () => {
    await expectRefused(w, { source: win, name: 'win' }, 'unsupported', /holds Windows .*needs a Linux guest with systemd/);
  }, 300_000);

  it('an image with no free space: refused naming the space it needs and sizeGib', async () => {
    await expectRefused(
      w,
      { source: full, name: 'full' },
      'invalid_request',
      /MiB free on \/ and the bake needs about \d+ MiB: pass sizeGib/,
    );
    rmSync(full);
  }, 600_000);

  // One bake per stage, cancelled once the job reports that stage (Docker skipped to keep it short;
  // the last two from an already baked image, whose bake stage has nothing to install).
  for (const stage of BAKE_STAGES) {
    it(`cancel in the ${stage} stage: cancelled, nothing left`, async () => {
      const name = `cancel-${stage}`;
      const source = stage === 'register' || stage === 'proof' ? baked : base;
      const id = w.svc.start({ source, name, docker: 'skip' });
      await until(
        `stage ${stage}`,
        () => {
          const j = w.jobs.get(id);
          if (j && ['failed', 'succeeded'].includes(j.state)) throw new Error(`job ended ${j.state} before ${stage}: ${j.error?.message}`);
          return j?.progress.step === stage;
        },
        900_000,
        100,
      );
      // inside the stage's tool (the proof: once the VM runs)
      if (stage === 'proof') await until('proof VM', async () => (await w.client.list()).length > 0, 120_000);
      else await new Promise((r) => setTimeout(r, stage === 'register' ? 0 : 1500));
      w.jobs.cancel(id);
      const job = await w.jobs.wait(id);
      expect(job.state).toBe('cancelled');
      await until(`nothing left after cancel in ${stage}`, async () => (await leftovers(w, name)).length === 0, 30_000, 500).catch(
        async () => {
          expect(await leftovers(w, name)).toEqual([]);
        },
      );
      expect(existsSync(source)).toBe(true);
    }, 900_000);
  }

  it('stages are the ones the contract names', () => {
    expect([...BAKE_STAGES]).toEqual(['source', 'inspect', 'packages', 'bake', 'register', 'proof'] satisfies BakeStage[]);
  });
});
