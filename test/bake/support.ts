/**
 * The bake suites' world: a real vm-manager (in-process, its own state dir), a real job
 * runner on a SQLite file, the BakeService, and the caches (the Debian base keyed by its inputs,
 * and the host's .deb cache) so warm runs skip mmdebstrap. The caches live outside the checkout
 * (POVDESK_TEST_CACHE, else ~/.cache/povdesk-test), so a fresh clone on the same machine — CI's
 * case — reuses them; a cold build costs minutes.
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRecord } from '../../shared/contract';
import { JobRunner } from '../../main/services/jobs/runner';
import { openDatabase } from '../../main/services/store/db';
import { BakeService } from '../../main/services/bake/service';
import { VmManagerClient } from '../../main/vm-api/client';
import { serve, type RunningManager } from '../../main/vm-manager/server';
import { needs } from '../support/system';
import { pidsWith } from '../vm-manager/support';

/** Its folder keeps the name `templates` from before the bake domain's rename: the caches stay valid. */
export const CACHE = join(process.env.POVDESK_TEST_CACHE ?? join(homedir(), '.cache', 'povdesk-test'), 'templates');
export const TOOLS = [
  'qemu-system-x86_64',
  'qemu-img',
  'swtpm',
  '/usr/share/OVMF/OVMF_CODE_4M.fd',
  'mmdebstrap',
  'guestfish',
  'virt-copy-out',
  'virt-resize',
  'virt-filesystems',
  'apt-get',
  'tar',
  'xmllint',
];

export function bakeSkip(): string | null {
  return needs(TOOLS);
}

export interface BakeWorld {
  home: string;
  state: string;
  /** where sources may be read from */
  sources: string;
  m: RunningManager;
  client: VmManagerClient;
  jobs: JobRunner;
  svc: BakeService;
  /** libguestfs's folders in the temp dirs when the world opened (another run's leftovers are not ours) */
  guestfsBefore: Set<string>;
  close(): Promise<void>;
}

/**
 * libguestfs's per-launch folders: `libguestfsXXXXXX` (its socket folder, always /tmp for root,
 * else $XDG_RUNTIME_DIR; and its temp folder, $LIBGUESTFS_TMPDIR or $TMPDIR or /tmp) and the
 * bake's own scratch folders (`povdesk-guestfs-*`, main/services/bake/tools.ts).
 */
export function guestfsFolders(): string[] {
  const dirs = new Set(['/tmp', tmpdir(), process.env.XDG_RUNTIME_DIR].filter((d): d is string => !!d && existsSync(d)));
  return [...dirs].flatMap((d) =>
    readdirSync(d)
      .filter((n) => /^libguestfs[A-Za-z0-9]{6}$|^povdesk-guestfs-/.test(n))
      .map((n) => join(d, n)),
  );
}

export async function bakeWorld(o: { proofTimeoutMs?: number } = {}): Promise<BakeWorld> {
  const home = mkdtempSync(join(tmpdir(), 'bake-home-'));
  const state = join(home, 'vm-manager');
  const sources = join(home, 'sources');
  mkdirSync(sources, { recursive: true });
  mkdirSync(CACHE, { recursive: true });
  const m = await serve({ stateDir: state, token: 'bake-token', dieWithParent: true });
  const client = new VmManagerClient(m.url, 'bake-token', 900_000);
  const db = openDatabase(join(home, 'povdesk.sqlite'));
  const jobs = new JobRunner(db);
  const svc = new BakeService({
    home,
    jobs,
    allowedDirs: [sources],
    cacheDir: CACHE,
    proofTimeoutMs: o.proofTimeoutMs,
    vmm: async () => ({ client, stateDir: state }),
  });
  return {
    home,
    state,
    sources,
    m,
    client,
    jobs,
    svc,
    guestfsBefore: new Set(guestfsFolders()),
    async close() {
      await jobs.shutdown();
      for (const v of m.vms.list()) await m.vms.delete(v.id).catch(() => {});
      await m.close({ stopVms: true });
      db.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export async function runJob(w: BakeWorld, id: string): Promise<JobRecord> {
  return w.jobs.wait(id);
}

/**
 * Everything a failed or cancelled bake could have left: work dirs, incoming files, images, VMs,
 * baked entries, processes, libguestfs's folders.
 */
export async function leftovers(w: BakeWorld, name: string): Promise<string[]> {
  const out: string[] = [];
  const work = join(w.home, 'templates', 'work');
  if (existsSync(work) && readdirSync(work).length) out.push(`work dirs: ${readdirSync(work).join(', ')}`);
  const incoming = join(w.state, 'incoming');
  if (existsSync(incoming) && readdirSync(incoming).length) out.push(`incoming: ${readdirSync(incoming).join(', ')}`);
  const images = (await w.client.localImages()).map((i) => i.name);
  if (images.includes(name)) out.push(`image ${name}`);
  const imgDir = join(w.state, 'images');
  if (existsSync(imgDir)) {
    const odd = readdirSync(imgDir).filter((n) => n.includes('.'));
    if (odd.length) out.push(`image store: ${odd.join(', ')}`);
  }
  const vms = await w.client.list();
  if (vms.length) out.push(`VMs: ${vms.map((v) => `${v.id} ${v.state}`).join(', ')}`);
  if (existsSync(w.svc.bakedDir(name))) out.push(`baked entry ${name}`);
  const procs = pidsWith(w.home);
  if (procs.length) out.push(`processes: ${procs.join(', ')}`);
  const guestfs = guestfsFolders().filter((d) => !w.guestfsBefore.has(d));
  if (guestfs.length) out.push(`libguestfs folders: ${guestfs.join(', ')}`);
  return out;
}

/** USTAR members in order: name, size, magic, version (from the 512-byte headers). */
export function tarMembers(file: string) {
  const fd = openSync(file, 'r');
  const out: { name: string; size: number; magic: string; version: string; offset: number }[] = [];
  try {
    const h = Buffer.alloc(512);
    let off = 0;
    for (;;) {
      if (readSync(fd, h, 0, 512, off) < 512 || h.every((b) => b === 0)) break;
      const str = (a: number, n: number) =>
        h
          .subarray(a, a + n)
          .toString('latin1')
          .replace(/\0.*$/s, '');
      const size = parseInt(str(124, 12).trim(), 8);
      out.push({
        name: str(0, 100),
        size,
        magic: h.subarray(257, 263).toString('latin1'),
        version: h.subarray(263, 265).toString('latin1'),
        offset: off + 512,
      });
      off += 512 + Math.ceil(size / 512) * 512;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}
