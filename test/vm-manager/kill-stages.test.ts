/**
 * A killed learn boot leaves nothing running (issue 33, item 12). A learn boot is the fallback for
 * an image without reference measurements (docs/attestation-golden.md): `image build-test` boots nothing
 * where OVMF is found (its references come from the files), so the boot here is a serving
 * manager's (`POST /images/{name}/learn-golden`, the app's "Learn golden values") on a copy of the
 * test image whose policy has no references. SIGKILL, which no handler sees, at each stage: AK
 * provisioning (a swtpm of its own), QEMU and swtpm launched, the guest attesting, its ready quote
 * verified. Afterwards no process that names the run's folders may be left, but for the network
 * switch: like the manager's VMs it outlives the manager on purpose (net-switch.ts), and the next
 * manager stops it once the learn VM is gone. Before the fix the provisioning swtpm outlived the
 * manager, and so did every process of its learn VM.
 * Real QEMU under TCG, swtpm, tpm2-tools.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listProcs, type ProcInfo } from '../../main/lib/procs';
import { readPolicy, writePolicy } from '../../main/vm-manager/images';
import { copyTestImage, pidsWith, serveProcess, stateWithImage, TestClient, until, vmSkip } from './support';

const skip = vmSkip();
const LEGACY = 'povdesk-legacy';

/** Processes (other than this one) whose command line names `marker`. */
const under = (marker: string): ProcInfo[] => listProcs().filter((p) => p.pid !== process.pid && p.argv.join(' ').includes(marker));

/** The states of the VMs recorded under `root` (any depth of vms/<id>/vm.json below a learn folder or a state dir). */
function vmStates(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 3 || !existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const rec = join(dir, e.name, 'vm.json');
      if (existsSync(rec)) {
        try {
          out.push((JSON.parse(readFileSync(rec, 'utf8')) as { state: string }).state);
        } catch {
          // being written
        }
      } else walk(join(dir, e.name), depth + 1);
    }
  };
  walk(root, 0);
  return out;
}

type Stage = 'provisioning' | 'launched' | 'attesting' | 'ready';
const qemuOf = (m: string, dir: string) =>
  under(m).some((p) => p.argv.some((a) => a.includes('qemu-system')) && p.argv.join(' ').includes(dir));
/** When a run under `marker` (its stderr so far: `out`) has reached the stage. */
const reached: Record<Stage, (marker: string, out: string) => boolean> = {
  // the AK's own swtpm: its socket in a private povdesk-swtpm- folder, its state under the run's
  provisioning: (m) => under(m).some((p) => p.argv.join(' ').includes('swtpm') && p.argv.join(' ').includes('/povdesk-swtpm-')),
  launched: (m) => qemuOf(m, '/vms/'),
  attesting: (m) => vmStates(m).includes('attesting'),
  // the ready quote has verified (the learn boot reads it and deletes the VM within moments)
  ready: (_m, out) => /ready quote verified/.test(out),
};

/** A network's vde_switch (net-switch.ts): it serves every VM of its network, so it outlives a manager like they do. */
const isSwitch = (p: ProcInfo) => p.argv.some((a) => a.endsWith('vde_switch')) && p.argv.join(' ').includes('/networks/');

/** Processes under `marker` that are still there once they had 10 s to go (`keep`: the ones that may stay). */
async function leftUnder(marker: string, keep: (p: ProcInfo) => boolean = () => false): Promise<string[]> {
  const left = () => under(marker).filter((p) => !keep(p));
  await until('nothing left of the run', () => left().length === 0, 10_000, 100).catch(() => {});
  return left().map((p) => `${p.pid} ${p.argv.join(' ').slice(0, 160)}`);
}

async function killAt(
  child: ChildProcess,
  marker: string,
  stage: Stage,
  out: () => string,
  keep?: (p: ProcInfo) => boolean,
): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  await until(
    `stage ${stage}`,
    () =>
      reached[stage](marker, out()) || (child.exitCode !== null ? Promise.reject(new Error(`exited before ${stage}:\n${out()}`)) : null),
    180_000,
    20,
  );
  child.kill('SIGKILL');
  await exited;
  expect(await leftUnder(marker, keep), `left running after a SIGKILL at ${stage}`).toEqual([]);
}

describe.skipIf(skip !== null)('SIGKILL at each stage of a learn boot leaves no process behind', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) {
      for (const p of pidsWith(d)) process.kill(p, 'SIGKILL');
      rmSync(d, { recursive: true, force: true });
    }
  });
  /** A state dir whose image `legacy` is the test image without reference measurements: golden values are its fallback. */
  function stateWithLegacyImage(): string {
    const state = stateWithImage('vmm-killlearn-');
    const dir = copyTestImage(state, LEGACY);
    const { references: _refs, ...legacy } = readPolicy(dir)!;
    writePolicy(dir, { ...legacy, unpredictable: 'a test copy without references' });
    return state;
  }

  for (const stage of ['provisioning', 'launched', 'attesting', 'ready'] as const) {
    it(`a manager killed during a learn boot at ${stage}; the next one removes the learn VM and its switch`, async () => {
      const state = stateWithLegacyImage();
      dirs.push(state);
      mkdirSync(join(state, 'vms'), { recursive: true });
      const serveArgs = ['--state-dir', state, '--port', '0'];
      const m = await serveProcess(serveArgs, 'tok');
      new TestClient(m.url, 'tok').call('POST', `/images/${LEGACY}/learn-golden`, {}).catch(() => {}); // cut off by the kill
      await killAt(m.child, state, stage, m.err, isSwitch);
      // The next manager does not keep the dead learn boot's VM, nor the switch of a network no VM uses.
      const next = await serveProcess(serveArgs, 'tok');
      try {
        expect(await new TestClient(next.url, 'tok').list()).toEqual([]);
        expect(await leftUnder(state, (p) => p.pid === next.child.pid), 'left running once the next manager started').toEqual([]);
      } finally {
        next.child.kill('SIGTERM');
        await new Promise((r) => next.child.once('exit', r));
      }
    }, 240_000);
  }
});
