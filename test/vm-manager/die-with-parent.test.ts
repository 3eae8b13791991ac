import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { pidsWith, repo, stateWithImage, until, vmSkip } from './support';

const skip = vmSkip();

/**
 * A learn boot's private manager (`image build-test`, learn-offline.ts) passes dieWithParent,
 * so a killed build (or test) leaves no QEMU or swtpm running; a serving manager's VMs outlive it on
 * purpose (it reattaches). Real QEMU under TCG, killed with SIGKILL, which no handler can catch.
 */
describe.skipIf(skip !== null)('VMs of a throw-away manager die with its process', () => {
  const states: string[] = [];
  afterAll(() => {
    for (const s of states) {
      for (const p of pidsWith(s)) process.kill(p, 'SIGKILL');
      rmSync(s, { recursive: true, force: true });
    }
  });

  async function killedManager(dieWithParent: boolean): Promise<{ state: string; pids: { qemu: number; swtpm: number } }> {
    const state = stateWithImage('vmm-pdeath-');
    states.push(state);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(repo, 'test', 'vm-manager', 'fixtures', 'throwaway-manager.ts'), state, dieWithParent ? '1' : '0'],
      {
        cwd: repo,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr!.on('data', (d) => (err += String(d)));
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the manager exited with ${code}: ${err}`)));
    });
    const pids = JSON.parse(line) as { qemu: number; swtpm: number };
    expect(pidsWith(state)).toEqual(expect.arrayContaining([pids.qemu, pids.swtpm]));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    return { state, pids };
  }

  it('with dieWithParent: QEMU and swtpm are gone within seconds of the SIGKILL', async () => {
    const { state } = await killedManager(true);
    await until('no process of the state dir', () => pidsWith(state).length === 0, 10_000, 100);
  }, 120_000);

  it('without it (a serving manager): they keep running, which is why learn boots ask for it', async () => {
    const { state, pids } = await killedManager(false);
    await new Promise((r) => setTimeout(r, 1500));
    expect(pidsWith(state)).toEqual(expect.arrayContaining([pids.qemu, pids.swtpm]));
  }, 120_000);
});
