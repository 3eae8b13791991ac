import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listProcs } from '../../main/lib/procs';
import { reasonToStay } from '../../main/vm-manager/unowned';
import type { VmRecord } from '../../main/vm-manager/vm-record';
import { needs } from '../support/system';
import { envFor, freshHome, povdesk, run, until, type Proc } from './procs';

/**
 * Idle local vm-manager daemons (issue 33, item 13): every one-shot `povdesk call` that needed the
 * local manager (a bake, vm.host) left a `vm-manager serve` running after it returned, with no VM
 * in it. Now a manager the supervisor started exits once no VM runs and the owner of the data
 * directory is gone, after a grace (shortened here) in which a following call reuses it.
 * Real `povdesk` processes and real daemons (no guest is booted).
 */
const skip = needs(['qemu-system-x86_64', 'swtpm', '/usr/share/OVMF/OVMF_CODE_4M.fd']);
const GRACE_MS = 8000;
const procs: Proc[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
});

/** `vm-manager serve` processes serving this home's state dir. */
const daemons = (home: string) =>
  listProcs()
    .filter((p) => p.argv.includes('serve') && p.argv.includes(join(home, 'vm-manager')))
    .map((p) => p.pid);
const endpointPid = (home: string) => (JSON.parse(readFileSync(join(home, 'vm-manager', 'endpoint.json'), 'utf8')) as { pid: number }).pid;

describe.skipIf(skip !== null)('local vm-manager daemons started for one-shot CLI calls', () => {
  it('a series of calls: one daemon, reused within the grace, none once the calls are over', async () => {
    const homes = [freshHome(), freshHome()];
    const env = (home: string) => ({ ...envFor(home, 'http://127.0.0.1:9'), POVDESK_VMM_UNOWNED_GRACE_MS: String(GRACE_MS) });
    // Three calls in one home, back to back, then one in a second home.
    for (const [i, home] of [homes[0]!, homes[0]!, homes[0]!, homes[1]!].entries()) {
      const r = await run(['call', i === 1 ? 'vm.list' : 'vm.host', '{}'], env(home));
      expect(r.code, r.err).toBe(0);
    }
    const first = endpointPid(homes[0]!);
    // The second and third calls reused the first call's daemon.
    expect(daemons(homes[0]!)).toEqual([first]);
    expect(daemons(homes[1]!)).toHaveLength(1);
    // Once the calls are over and the grace has passed, no daemon is left in either home.
    await until(() => daemons(homes[0]!).length === 0 && daemons(homes[1]!).length === 0, GRACE_MS + 15_000, 'the idle daemons to exit');
    expect(readFileSync(join(homes[0]!, 'vm-manager', 'manager.log'), 'utf8')).toMatch(/exiting: no VM to supervise/);
    // A later call starts a fresh one (and it goes too).
    const again = await run(['call', 'vm.host', '{}'], env(homes[0]!));
    expect(again.code, again.err).toBe(0);
    expect(endpointPid(homes[0]!)).not.toBe(first);
    await until(() => daemons(homes[0]!).length === 0, GRACE_MS + 15_000, 'the second daemon to exit');
  }, 180_000);

  it('while the app (povdesk serve) owns the data directory its daemon stays; when serve stops, the daemon goes', async () => {
    const home = freshHome();
    const env = { ...envFor(home, 'http://127.0.0.1:9'), POVDESK_VMM_UNOWNED_GRACE_MS: String(GRACE_MS) };
    const serve = povdesk(['serve', '--port', '0'], env);
    procs.push(serve);
    await serve.waitFor(/serving http/);
    const r = await run(['call', 'vm.host', '{}'], env);
    expect(r.code, r.err).toBe(0);
    const pid = endpointPid(home);
    await new Promise((res) => setTimeout(res, GRACE_MS * 2));
    expect(daemons(home), 'the daemon of a running app').toEqual([pid]);
    serve.child.kill('SIGTERM');
    await serve.exited;
    await until(() => daemons(home).length === 0, GRACE_MS + 15_000, 'the daemon to exit after its owner');
  }, 180_000);
});

describe('reasonToStay', () => {
  const vm = (state: VmRecord['state']) => ({ state }) as VmRecord;
  const ownerFile = (pid: number | null) => {
    const f = join(freshHome(), 'owner.json');
    if (pid !== null) writeFileSync(f, JSON.stringify({ pid, kind: 'cli', startedAt: new Date().toISOString() }));
    return f;
  };
  const deadPid = () => {
    const c = spawn(process.execPath, ['-e', '0']);
    return new Promise<number>((res) => c.once('exit', () => res(c.pid!)));
  };

  it('stays for a VM that is not stopped, a request in flight, or a live owner; goes otherwise', async () => {
    const gone = ownerFile(await deadPid());
    expect(reasonToStay({ vms: [], requests: 0, ownerFile: gone })).toBeNull();
    expect(reasonToStay({ vms: [vm('stopped'), vm('failed')], requests: 0, ownerFile: gone })).toBeNull();
    expect(reasonToStay({ vms: [], requests: 0, ownerFile: ownerFile(null) })).toBeNull();
    for (const s of ['creating', 'booting', 'attesting', 'ready', 'running', 'stopping', 'deleting'] as const) {
      expect(reasonToStay({ vms: [vm('stopped'), vm(s)], requests: 0, ownerFile: gone })).toMatch(/1 VM/);
    }
    expect(reasonToStay({ vms: [], requests: 1, ownerFile: gone })).toMatch(/request/);
    expect(reasonToStay({ vms: [], requests: 0, ownerFile: ownerFile(process.pid) })).toMatch(new RegExp(`owner pid ${process.pid}`));
  });
});
