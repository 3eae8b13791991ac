/**
 * A killed learn boot leaves nothing running (issue 33, item 12). SIGKILL, which no handler sees,
 * at each stage of `image build-test` (its private manager) and of a learn boot in a serving
 * manager (`POST /images/{name}/learn-golden`, the app's "Learn golden values"): the manager's
 * accelerator probe (a throwaway QEMU), AK provisioning (a swtpm of its own), QEMU and swtpm
 * launched, the guest attesting, its ready quote verified. Afterwards no process that names the
 * run's folders may be left. Before, the probe's QEMU (for up to 20 s) and the provisioning swtpm
 * outlived both, and every process of a serving manager's learn VM outlived it.
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

async function killAt(child: ChildProcess, marker: string, stage: Stage, out: () => string): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  await until(`stage ${stage}`, () => reached[stage](marker, out()) || (child.exitCode !== null ? Promise.reject(new Error(`exited before ${stage}:\n${out()}`)) : null), 180_000, 20);
  child.kill('SIGKILL');
  await exited;
  const left = await until('nothing left of the run', () => under(marker).length === 0, 10_000, 100).then(
    () => [] as ProcInfo[],
    () => under(marker),
  );
  expect(left.map((p) => `${p.pid} ${p.argv.join(' ').slice(0, 160)}`), `left running after a SIGKILL at ${stage}`).toEqual([]);
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

  for (const stage of ['provisioning', 'launched', 'ready'] as const) {
    it(`a serving manager killed during a learn boot at ${stage}; the next one removes the learn VM`, async () => {
      const state = stateWithImage('vmm-killlearn-');
      dirs.push(state);
      mkdirSync(join(state, 'vms'), { recursive: true });
      const serveArgs = ['--state-dir', state, '--token', 'tok', '--port', '0'];
      const m = await serveProcess(serveArgs);
      new TestClient(m.url, 'tok').call('POST', `/images/${TEST_IMAGE}/learn-golden`, {}).catch(() => {}); // cut off by the kill
      await killAt(m.child, state, stage, m.err);
      // The next manager does not keep the dead learn boot's VM.
      const next = await serveProcess(serveArgs);
      try {
        expect(await new TestClient(next.url, 'tok').list()).toEqual([]);
      } finally {
        next.child.kill('SIGTERM');
        await new Promise((r) => next.child.once('exit', r));
      }
    }, 240_000);
  }
});
