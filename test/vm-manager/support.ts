/** Shared pieces of the vm-manager suites: one built test image reused via a cache dir, state dirs, process checks. */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listProcs } from '../../main/lib/procs';
import { GUEST_QUOTE_SCRIPT } from '../../main/vm-manager/attest/index';
import { findOvmf } from '../../main/vm-manager/host';
import { buildTestImage, findKernel, TEST_IMAGE } from '../../main/vm-manager/images';
import { needs } from '../support/system';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = join(here, '..', '..');
export const CACHE = join(repo, 'test', 'fixtures', 'generated', 'vm-manager');
export const SYSTEM = ['qemu-system-x86_64', 'qemu-img', 'swtpm', 'tpm2_quote', '/bin/busybox', '/usr/share/OVMF/OVMF_CODE_4M.fd'];

export function vmSkip(): string | null {
  const r = needs(SYSTEM);
  if (r) return r;
  try {
    findKernel();
  } catch (e) {
    if (process.env.CI === 'true') throw e;
    return String(e);
  }
  return null;
}

function inputsHash(): string {
  const h = createHash('sha256');
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'guest', 'init.sh')));
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'images.ts')));
  h.update(readFileSync(join(repo, 'main', 'vm-manager', 'cpio.ts')));
  if (existsSync(GUEST_QUOTE_SCRIPT)) h.update(readFileSync(GUEST_QUOTE_SCRIPT));
  h.update(findKernel().kernel);
  return h.digest('hex');
}

/** The cached test image (built once per input change; golden values learned later are kept with it). */
export function cachedImageDir(): string {
  const stamp = join(CACHE, 'inputs.sha256');
  const dir = join(CACHE, 'images', TEST_IMAGE);
  const want = inputsHash();
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== want || !existsSync(join(dir, 'image.json'))) {
    rmSync(CACHE, { recursive: true, force: true });
    mkdirSync(CACHE, { recursive: true });
    buildTestImage(CACHE, { ovmfCode: findOvmf()?.code ?? null });
    writeFileSync(stamp, want);
  }
  return dir;
}

/** A fresh state dir with the cached test image copied in. */
export function stateWithImage(prefix = 'vmm-'): string {
  const src = cachedImageDir();
  const state = mkdtempSync(join(tmpdir(), prefix));
  cpSync(src, join(state, 'images', TEST_IMAGE), { recursive: true });
  return state;
}

/** Pids of live processes (not this one) whose argv mentions `marker`. */
export function pidsWith(marker: string): number[] {
  return listProcs()
    .filter((p) => p.pid !== process.pid && p.argv.join('\0').includes(marker))
    .map((p) => p.pid);
}

export async function until<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, ms = 60_000, step = 200): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, step));
  }
}
