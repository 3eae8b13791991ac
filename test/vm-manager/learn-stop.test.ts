/**
 * `image build-test` runs a learn boot, under a throwaway manager in its own process, when it cannot
 * make the test image's reference measurements: here a host without xz (it unpacks the firmware's
 * volumes), made by a PATH of everything on this host but xz. The app runs the build as a child and
 * sends SIGTERM when the job is cancelled or the app quits; the learn boot's QEMU and swtpm must go
 * with it (they outlived it before: a CI-style run found one still running, its guest reporting
 * READY to a manager that no longer existed).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { managerCommand } from '../../main/services/vm/supervisor';
import { pidsWith, stateWithImage, until, vmSkip } from './support';

const skip = vmSkip();

/** Direct children of `parent`, with their argv. */
function children(parent: number): { pid: number; argv: string }[] {
  const out: { pid: number; argv: string }[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) out.push({ pid: Number(e), argv: readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').join(' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe.skipIf(skip !== null)('image build-test stopped during its learn boot', () => {
  const state = stateWithImage('vmm-learnstop-');
  afterAll(() => rmSync(state, { recursive: true, force: true }));

  it('SIGTERM takes the learn VM, its swtpm and its folder down, saves nothing, and says why', async () => {
    // No xz: no reference measurements, and no golden values yet, so build-test boots to learn them.
    const noXz = join(state, 'bin-without-xz');
    mkdirSync(noXz);
    for (const dir of ['/usr/local/bin', '/usr/bin']) {
      for (const f of existsSync(dir) ? readdirSync(dir) : []) {
        if (!/^(xz|unxz|xzcat|lzma|unlzma|lzcat)$/.test(f) && !existsSync(join(noXz, f))) symlinkSync(join(dir, f), join(noXz, f));
      }
    }
    const env = { ...process.env, POVDESK_FROM_SOURCE: '1', PATH: noXz };
    const cmd = managerCommand(env);
    const [bin, ...pre] = cmd.argv;
    const cli = spawn(bin!, [...pre, 'image', 'build-test', '--state-dir', state], {
      cwd: cmd.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    cli.stderr.on('data', (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((r) => cli.on('exit', (code) => r(code)));

    const qemu = await until(
      "the learn boot's QEMU",
      () => children(cli.pid!).find((c) => c.argv.includes('qemu-system') && c.argv.includes(join(tmpdir(), 'povdesk-learn-'))),
      120_000,
    );
    const prefix = join(tmpdir(), 'povdesk-learn-');
    const learnDir = prefix + /^\w+/.exec(qemu.argv.slice(qemu.argv.indexOf(prefix) + prefix.length))![0];
    expect(pidsWith(learnDir).length, `QEMU and swtpm under ${learnDir}: ${pidsWith(learnDir).join(' ')}`).toBeGreaterThanOrEqual(2);

    cli.kill('SIGTERM');
    expect(await exited).not.toBe(0);
    expect(stderr).toMatch(/no reference measurements for povdesk-test: .*xz is missing.*golden values are the fallback/);
    expect(stderr).toMatch(/the learn boot of povdesk-test was stopped \(SIGTERM\); its VM is gone and no golden values were saved/);
    await until('nothing left of the learn boot', () => pidsWith(learnDir).length === 0, 15_000).catch(() => {
      throw new Error(`still running after the CLI exited: ${pidsWith(learnDir).join(', ')}\n${stderr}`);
    });
    expect(existsSync(learnDir)).toBe(false);
    const policy = JSON.parse(readFileSync(join(state, 'images', 'povdesk-test', 'policy.json'), 'utf8')) as {
      golden: { sha256: Record<string, string> };
    };
    expect(policy.golden.sha256).toEqual({});
  }, 180_000);
});
