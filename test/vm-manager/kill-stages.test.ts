/**
 * A killed learn boot leaves nothing running (issue 33, item 12). SIGKILL, which no handler sees,
 * at each stage of `image build-test` (its private manager) and of a learn boot in a serving
 * manager (`POST /images/{name}/learn-golden`, the app's "Learn golden values"): the manager's
 * accelerator probe (a throwaway QEMU), AK provisioning (a swtpm of its own), QEMU and swtpm
 * launched, the guest attesting, its ready quote verified. Afterwards no process that names the
 * run's folders may be left, but for a serving manager's network switch: like its VMs it outlives
 * the manager on purpose (net-switch.ts), and the next manager stops it once the learn VM is gone.
 * Before, the probe's QEMU (for up to 20 s) and the provisioning swtpm outlived both, and every
 * process of a serving manager's learn VM outlived it.
 * Real QEMU under TCG, swtpm, tpm2-tools.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listProcs, type ProcInfo } from '../../main/lib/procs';
import { managerCommand } from '../../main/services/vm/supervisor';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { tempDir } from '../support/temp-dirs';
import { pidsWith, serveProcess, stateWithImage, TestClient, until, vmSkip } from './support';

const skip = vmSkip();

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

type Stage = 'probing' | 'provisioning' | 'launched' | 'attesting' | 'ready';
const qemuOf = (m: string, dir: string) => under(m).some((p) => p.argv.some((a) => a.includes('qemu-system')) && p.argv.join(' ').includes(dir));
/** When a run under `marker` (its stderr so far: `out`) has reached the stage. */
const reached: Record<Stage, (marker: string, out: string) => boolean> = {
  // the manager's accelerator probe: a throwaway QEMU at its start
  probing: (m) => qemuOf(m, '/vmm-probe-'),
  provisioning: (m) => under(m).some((p) => p.argv.join(' ').includes('swtpm') && p.argv.join(' ').includes('type=tcp')),
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

async function killAt(child: ChildProcess, marker: string, stage: Stage, out: () => string, keep?: (p: ProcInfo) => boolean): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  await until(`stage ${stage}`, () => reached[stage](marker, out()) || (child.exitCode !== null ? Promise.reject(new Error(`exited before ${stage}:\n${out()}`)) : null), 180_000, 20);
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
  const cmd = managerCommand({ ...process.env, POVDESK_FROM_SOURCE: '1' });
  const [bin, ...pre] = cmd.argv;

  for (const stage of ['probing', 'provisioning', 'launched', 'attesting', 'ready'] as const) {
    it(`image build-test killed at ${stage}`, async () => {
      const state = stateWithImage('vmm-killbt-');
      // Its own temp folder: the learn boot's private state dir, the probe's and the AK's work dirs land under it, so every child names it.
      const tmp = tempDir('vmm-killbt-tmp-');
      dirs.push(state, tmp);
      const cli = spawn(bin!, [...pre, 'image', 'build-test', '--state-dir', state], { cwd: cmd.cwd, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TMPDIR: tmp } });
      let err = '';
      cli.stderr!.on('data', (d) => (err += String(d)));
      await killAt(cli, tmp, stage, () => err);
    }, 240_000);
  }

  // The stages that differ from build-test's private manager: before the learn VM exists, and once its processes run.
  for (const stage of ['provisioning', 'launched'] as const) {
    it(`a serving manager killed during a learn boot at ${stage}; the next one removes the learn VM and its switch`, async () => {
      const state = stateWithImage('vmm-killlearn-');
      dirs.push(state);
      mkdirSync(join(state, 'vms'), { recursive: true });
      const serveArgs = ['--state-dir', state, '--port', '0'];
      const m = await serveProcess(serveArgs, 'tok');
      new TestClient(m.url, 'tok').call('POST', `/images/${TEST_IMAGE}/learn-golden`, {}).catch(() => {}); // cut off by the kill
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
