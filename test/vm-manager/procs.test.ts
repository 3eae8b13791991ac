/**
 * Process liveness by pid + start time + command line, through each backend this host can run:
 * /proc (Linux) and ps (macOS/BSD; Linux's procps answers the same options, so the portable path is
 * exercised here for real). Windows' Win32_Process answer is parsed from recorded PowerShell output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  aliveWith,
  listProcs,
  parseCim,
  parsePs,
  procBackend,
  procInfo,
  readPid,
  readPidStart,
  waitGone,
  writePid,
  type ProcBackend,
} from '../../main/lib/procs';
import { needs } from '../support/system';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A sleeping process whose command line carries a unique marker. */
function sleeper(): { pid: number; marker: string; child: ChildProcess } {
  const marker = `povdesk-procs-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const child = spawn('sh', ['-c', 'sleep 30', marker], { stdio: 'ignore' });
  children.push(child);
  return { pid: child.pid!, marker, child };
}

const exited = (c: ChildProcess) =>
  new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

describe('procBackend', () => {
  it('picks /proc on Linux, ps on macOS, Win32_Process on Windows', () => {
    expect(procBackend('linux')).toBe('proc');
    expect(procBackend('darwin')).toBe('ps');
    expect(procBackend('freebsd')).toBe('ps');
    expect(procBackend('win32')).toBe('cim');
  });
});

// ps is how macOS answers; Linux's procps takes the same options, so the portable path runs here (CI=true: required).
const backends: ProcBackend[] = needs(['ps']) === null ? ['proc', 'ps'] : ['proc'];
describe.each(backends)('the %s backend on this host', (backend) => {
  it('reports a live process with its command line and a start time that does not change', async () => {
    const s = sleeper();
    const a = procInfo(s.pid, backend);
    expect(a).not.toBeNull();
    expect(a!.argv.join(' ')).toContain(s.marker);
    expect(a!.start).not.toBe('');
    await new Promise((r) => setTimeout(r, 1100)); // across a second boundary (ps's lstart has 1 s resolution)
    expect(procInfo(s.pid, backend)!.start).toBe(a!.start);
    expect(listProcs(backend).find((p) => p.pid === s.pid)?.start).toBe(a!.start);
  });

  it('reports nothing once the process is gone, and nothing for nonsense pids', async () => {
    const s = sleeper();
    s.child.kill('SIGKILL');
    await exited(s.child);
    expect(procInfo(s.pid, backend)).toBeNull();
    expect(procInfo(0, backend)).toBeNull();
    expect(procInfo(-1, backend)).toBeNull();
    expect(listProcs(backend).some((p) => p.pid === s.pid)).toBe(false);
  });

  it('gives processes started at different times different start times (what tells a reused pid from ours)', async () => {
    const a = sleeper();
    await new Promise((r) => setTimeout(r, 1100));
    const b = sleeper();
    const [sa, sb] = [procInfo(a.pid, backend)!.start, procInfo(b.pid, backend)!.start];
    expect(sa).not.toBe(sb);
  });
});

describe('aliveWith and pid files (default backend)', () => {
  it('is true only for the pid with the marker and, when given, the recorded start time', async () => {
    const s = sleeper();
    const start = procInfo(s.pid)!.start;
    expect(aliveWith(s.pid, s.marker)).toBe(true);
    expect(aliveWith(s.pid, s.marker, start)).toBe(true);
    expect(aliveWith(s.pid, s.marker, `${start}0`)).toBe(false);
    expect(aliveWith(s.pid, 'not-its-marker')).toBe(false);
    s.child.kill('SIGTERM');
    expect(await waitGone(() => aliveWith(s.pid, s.marker), 5000)).toBe(true);
  });

  it('writes the start time beside the pid, and reads pid files written before start times were kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'procs-'));
    try {
      const s = sleeper();
      writePid(join(dir, 'a.pid'), s.pid);
      expect(readPid(join(dir, 'a.pid'))).toBe(s.pid);
      expect(readPidStart(join(dir, 'a.pid'))).toBe(procInfo(s.pid)!.start);
      writeFileSync(join(dir, 'old.pid'), `${s.pid}\n`);
      expect(readPid(join(dir, 'old.pid'))).toBe(s.pid);
      expect(readPidStart(join(dir, 'old.pid'))).toBeNull();
      expect(readPidStart(join(dir, 'none.pid'))).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parsers for the other platforms’ answers', () => {
  it('parses macOS ps output, skipping zombies and lines that are not processes', () => {
    const out = [
      '  412 Ss   Tue Dec  1 09:02:11 2026     /opt/homebrew/bin/qemu-system-x86_64 -name povdesk -accel tcg',
      '  977 Z    Tue Dec  1 09:05:00 2026     (qemu-system-x86)',
      '31000 S    Mon Nov 30 23:59:59 2026     /opt/homebrew/bin/swtpm socket --tpmstate dir=/Users/se/Library/vm/tpm',
      'garbage',
      '',
    ].join('\n');
    expect(parsePs(out)).toEqual([
      { pid: 412, start: 'Tue Dec  1 09:02:11 2026', argv: ['/opt/homebrew/bin/qemu-system-x86_64 -name povdesk -accel tcg'] },
      { pid: 31000, start: 'Mon Nov 30 23:59:59 2026', argv: ['/opt/homebrew/bin/swtpm socket --tpmstate dir=/Users/se/Library/vm/tpm'] },
    ]);
  });

  it('parses Win32_Process JSON from Windows PowerShell 5.1 (one object) and PowerShell 7 (an array)', () => {
    const ps51 =
      '{"ProcessId":5120,"CreationDate":"\\/Date(1764579731123)\\/",' +
      '"CommandLine":"\\"C:\\\\Program Files\\\\qemu\\\\qemu-system-x86_64.exe\\" -name povdesk"}';
    expect(parseCim(ps51)).toEqual([
      { pid: 5120, start: '1764579731123', argv: ['"C:\\Program Files\\qemu\\qemu-system-x86_64.exe" -name povdesk'] },
    ]);
    const ps7 =
      '[{"ProcessId":4,"CreationDate":"2026-12-01T09:00:00.5+00:00","CommandLine":null},' +
      '{"ProcessId":77,"CreationDate":"2026-12-01T09:01:02.25+00:00","CommandLine":"swtpm.exe socket"}]';
    expect(parseCim(ps7)).toEqual([
      { pid: 4, start: '2026-12-01T09:00:00.5+00:00', argv: [] },
      { pid: 77, start: '2026-12-01T09:01:02.25+00:00', argv: ['swtpm.exe socket'] },
    ]);
    expect(parseCim('')).toEqual([]);
  });
});
