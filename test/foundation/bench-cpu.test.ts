// The CPU accounting bench ssh-ui prints (test/bench/_cpu.ts), against real processes: a busy
// "host", a shell tree standing in for sshd whose busy child exits (its CPU must still count,
// through the shell that reaped it, as `cat` does under the session's shell), and a process that
// ends between snapshots (it must not take from the others, as it did when totals by kind were
// compared instead of processes).
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, expect, it } from 'vitest';
import { cpuSince, cpuSnapshot, leastWall, total } from '../bench/_cpu';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) c.kill('SIGKILL');
});

/**
 * Burns `ms` of its own CPU time from when it starts burning (not wall time: the machine may be
 * busy; not from process start: node's own start-up, ~0.1 s of CPU on a loaded machine, would
 * be taken out of the burn and out of what a later snapshot can see), then says "done".
 */
const burn = (ms: number) =>
  `{ const cpu = () => (process.cpuUsage().user + process.cpuUsage().system) / 1000; ` +
  `const t0 = cpu(); while (cpu() - t0 < ${ms}); console.log("done"); }`;

function start(cmd: string, args: string[]): ChildProcess {
  const c = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  started.push(c);
  return c;
}
const says = (c: ChildProcess, word: string) =>
  new Promise<void>((r) => {
    let out = '';
    c.stdout!.on('data', (b: Buffer) => (out += b.toString()).includes(word) && r());
  });

it('counts the host, and an exited grandchild of sshd through the shell that reaped it', async () => {
  const host = start(process.execPath, ['-e', `${burn(400)} setTimeout(() => {}, 60000)`]);
  // the listener (root, not counted itself) → the session's shell → a busy child that exits
  const sshd = start('sh', ['-c', `sh -c '${process.execPath} -e "${burn(400).replace(/"/g, '\\"')}"; echo reaped; sleep 60'; sleep 60`]);
  const before = cpuSnapshot(host.pid!, sshd.pid!);
  await Promise.all([says(host, 'done'), says(sshd, 'reaped')]);
  const used = cpuSince(before, cpuSnapshot(host.pid!, sshd.pid!));
  expect(used.host).toBeGreaterThan(0.3);
  expect(used.sshd).toBeGreaterThan(0.3);
  expect(used.rendererMain + used.rendererOther + used.gpu + used.browser).toBe(0);
  expect(leastWall(used, 2)).toBeCloseTo(total(used) / 2);
});

it('leaves out a process that ended between snapshots instead of subtracting it', async () => {
  const gone = start(process.execPath, ['-e', burn(400)]);
  // burns only when told, after the first snapshot
  const stay = start(process.execPath, ['-e', `process.stdin.once('data', () => { ${burn(300)} }); setTimeout(() => {}, 60000)`]);
  await says(gone, 'done');
  const before = new Map([...cpuSnapshot(gone.pid!, null), ...cpuSnapshot(stay.pid!, null)]);
  expect(before.get(gone.pid!)!.host).toBeGreaterThan(0.3);
  await new Promise((r) => (gone.exitCode !== null ? r(null) : gone.once('exit', r)));
  stay.stdin!.write('go\n');
  await says(stay, 'done');
  const used = cpuSince(before, cpuSnapshot(stay.pid!, null));
  expect(used.host).toBeGreaterThan(0.2);
});
