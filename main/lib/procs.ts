/**
 * The one reader of the process table (/proc, ps or Windows' Win32_Process: procBackend), for the
 * app and the vm-manager alike: detached processes (own process group, so VMs outlive the
 * manager), pid files, and liveness checks that also confirm the pid still belongs to the program
 * we started (its command line and, where recorded, its start time).
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { sleep } from './sleep';

export interface Started {
  pid: number;
  /** Resolves with the exit when this process is our child; reattached processes are polled instead. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A program and its arguments as spawn takes them, so that it dies with this process (Linux):
 * util-linux's setpriv sets PR_SET_PDEATHSIG and execs the program in place (same pid, its own
 * argv), and the kernel kills it when this process dies, SIGKILL included. Where setpriv is
 * missing (not Linux, no util-linux), the program itself, which then outlives a killed parent.
 */
export function dyingWithParent(cmd: string, args: string[]): [file: string, argv: string[]] {
  const setpriv = setprivPath();
  return setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', cmd, ...args]] : [cmd, args];
}

/** Starts a program in its own process group with stdout/stderr appended to logFile. */
export function startDetached(cmd: string, args: string[], logFile: string, o: { dieWithParent?: boolean } = {}): Started {
  const fd = openSync(logFile, 'a');
  try {
    const [file, argv] = o.dieWithParent ? dyingWithParent(cmd, args) : [cmd, args];
    const child = spawn(file, argv, { detached: true, windowsHide: true, stdio: ['ignore', fd, fd] });
    if (file !== cmd && child.pid !== undefined) awaitSecondExec(child.pid, cmd);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: 127, signal: null }));
    });
    if (child.pid === undefined) throw new Error(`cannot start ${cmd}: spawn gave no pid (see ${logFile})`);
    child.unref();
    return { pid: child.pid, exited };
  } finally {
    closeSync(fd);
  }
}

let setprivFound: string | null | undefined;
/** util-linux's setpriv (Linux only); null where it is missing. */
function setprivPath(): string | null {
  if (setprivFound === undefined) {
    setprivFound =
      process.platform === 'linux' ? (['/usr/bin/setpriv', '/bin/setpriv', '/usr/sbin/setpriv'].find((p) => existsSync(p)) ?? null) : null;
  }
  return setprivFound;
}

/**
 * spawn returns once setpriv runs (libuv waits for the first exec), but setpriv's own exec of the
 * program is still to come, and while it happens /proc/<pid>/cmdline reads empty: a liveness check
 * by command line (aliveWith) then took the process for dead and the launch failed ("swtpm did not
 * open its socket", no output). So wait, a few milliseconds, until the pid runs the program itself.
 */
function awaitSecondExec(pid: number, cmd: string) {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const end = Date.now() + 2000;
  while (Date.now() < end) {
    const argv = procCmdline(pid);
    if (argv === null || argv[0] === cmd) return; // gone (its exit says why), or running the program
    Atomics.wait(nap, 0, 0, 2);
  }
}

/** A running process as the OS reports it: when it started (opaque, compared for equality) and its command line. */
export interface ProcInfo {
  pid: number;
  /** Start time in the backend's own unit; the same process always reports the same value. */
  start: string;
  /** argv from /proc; from ps and Windows the whole command line as one string. */
  argv: string[];
}

/**
 * How this host answers "is pid N still the process we started": /proc on Linux, `ps` on macOS
 * and the BSDs (and Linux without /proc), Win32_Process through PowerShell on Windows.
 */
export type ProcBackend = 'proc' | 'ps' | 'cim';

export function procBackend(platform: NodeJS.Platform = process.platform): ProcBackend {
  if (platform === 'win32') return 'cim';
  if (platform === 'linux' && existsSync('/proc/self/stat')) return 'proc';
  return 'ps';
}

/** /proc/<pid>/stat and cmdline, with the process group; null for no such process or a zombie. */
function procEntry(pid: number): { info: ProcInfo; pgrp: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the fields after the command name: state, ppid, pgrp, …
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return null;
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    // field 22 (starttime, clock ticks since boot) is the 20th after the command name
    return { info: { pid, start: fields[19] ?? '', argv: raw.split('\0').filter((s) => s !== '') }, pgrp: Number(fields[2]) };
  } catch {
    return null;
  }
}

function viaProc(pid: number): ProcInfo | null {
  return procEntry(pid)?.info ?? null;
}

function procPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map(Number);
  } catch {
    return [];
  }
}

/** Parses `ps -o pid= -o stat= -o lstart= -o command=` lines (lstart is a fixed 24 characters). */
export function parsePs(out: string): ProcInfo[] {
  const rows: ProcInfo[] = [];
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s+(\S+)\s+(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\s+(.*)$/.exec(line);
    if (!m || m[2]!.startsWith('Z')) continue;
    rows.push({ pid: Number(m[1]), start: m[3]!, argv: [m[4]!] });
  }
  return rows;
}

function viaPs(pid: number | null): ProcInfo[] {
  try {
    const out = execFileSync(
      'ps',
      [...(pid === null ? ['-A'] : ['-p', String(pid)]), '-o', 'pid=', '-o', 'stat=', '-o', 'lstart=', '-o', 'command='],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return parsePs(out);
  } catch {
    return []; // ps exits 1 when the pid does not exist
  }
}

/** Parses Win32_Process rows as PowerShell's ConvertTo-Json writes them (one object or an array). */
export function parseCim(out: string): ProcInfo[] {
  if (!out.trim()) return [];
  const data = JSON.parse(out) as unknown;
  const rows = (Array.isArray(data) ? data : [data]) as { ProcessId?: unknown; CreationDate?: unknown; CommandLine?: unknown }[];
  return rows
    .filter((r) => typeof r.ProcessId === 'number')
    .map((r) => {
      // Windows PowerShell 5.1 writes dates as "/Date(ms)/", PowerShell 7 as ISO strings; both are stable per process.
      const created =
        typeof r.CreationDate === 'string'
          ? (/\/Date\((\d+)\)\//.exec(r.CreationDate)?.[1] ?? r.CreationDate)
          : String(r.CreationDate ?? '');
      return { pid: r.ProcessId as number, start: created, argv: typeof r.CommandLine === 'string' ? [r.CommandLine] : [] };
    });
}

function viaCim(pid: number | null): ProcInfo[] {
  const filter = pid === null ? '' : ` -Filter "ProcessId=${pid}"`;
  try {
    const out = execFileSync(
      'powershell.exe',
      [
        '-NoProfile',
        '-NonInteractive',
        '-Command',
        `Get-CimInstance Win32_Process${filter} | Select-Object ProcessId,CreationDate,CommandLine | ConvertTo-Json -Compress`,
      ],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        windowsHide: true,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return parseCim(out);
  } catch {
    return [];
  }
}

/** The process with this pid (start time and command line), or null when none runs. */
export function procInfo(pid: number, backend: ProcBackend = procBackend()): ProcInfo | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (backend === 'proc') return viaProc(pid);
  return (backend === 'ps' ? viaPs(pid) : viaCim(pid)).find((p) => p.pid === pid) ?? null;
}

/** Every running process. */
export function listProcs(backend: ProcBackend = procBackend()): ProcInfo[] {
  if (backend === 'ps') return viaPs(null);
  if (backend === 'cim') return viaCim(null);
  return procPids()
    .map(viaProc)
    .filter((p): p is ProcInfo => p !== null);
}

/** The live members of a process group (Linux's /proc; empty elsewhere). */
export function processGroup(pgid: number): ProcInfo[] {
  if (procBackend() !== 'proc') return [];
  return procPids()
    .map(procEntry)
    .filter((e) => e !== null && e.pgrp === pgid)
    .map((e) => e!.info);
}

/** The command line of a live pid; null when there is no such process or it is a zombie. */
export function procCmdline(pid: number): string[] | null {
  return procInfo(pid)?.argv ?? null;
}

/** When a live pid started (see ProcInfo.start), or null. */
export function procStart(pid: number): string | null {
  return procInfo(pid)?.start ?? null;
}

/** Pids whose command line holds every marker. */
export function pidsMatching(markers: string[]): number[] {
  return listProcs()
    .filter((p) => markers.every((m) => p.argv.some((a) => a.includes(m))))
    .map((p) => p.pid);
}

/**
 * True when pid runs and its command line contains `marker`, and, when `start` is given, it is the
 * same process that had that start time (guards against pid reuse).
 */
export function aliveWith(pid: number | null | undefined, marker: string, start?: string | null): boolean {
  if (!pid || pid <= 0) return false;
  const p = procInfo(pid);
  return p !== null && p.argv.some((a) => a.includes(marker)) && (start == null || p.start === start);
}

/** Writes the pid and, on a second line, its start time, so a reused pid is not taken for ours. */
export function writePid(file: string, pid: number): void {
  const start = procStart(pid);
  writeFileSync(file, start ? `${pid}\n${start}\n` : `${pid}\n`);
}

/** The start time a pid file recorded (null for files written before start times were kept). */
export function readPidStart(file: string): string | null {
  if (!existsSync(file)) return null;
  return readFileSync(file, 'utf8').split('\n')[1]?.trim() || null;
}

export function readPid(file: string): number | null {
  if (!existsSync(file)) return null;
  const n = Number.parseInt(readFileSync(file, 'utf8').split('\n')[0]!.trim(), 10);
  return Number.isInteger(n) && n > 0 ? n : null;
}

export function removePid(file: string): void {
  rmSync(file, { force: true });
}

/** True while some process has this pid, ours or not (signal 0; EPERM means it exists). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `alive()` turns false; true if it did within ms. */
export async function waitGone(alive: () => boolean, ms: number, stepMs = 50): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive()) return true;
    await sleep(stepMs);
  }
  return !alive();
}

/** SIGTERM, then SIGKILL after graceMs. Resolves when the process is gone. */
export async function terminate(pid: number, marker: string, graceMs = 3000): Promise<'gone' | 'term' | 'kill'> {
  if (!aliveWith(pid, marker)) return 'gone';
  signal(pid, 'SIGTERM');
  if (await waitGone(() => aliveWith(pid, marker), graceMs)) return 'term';
  signal(pid, 'SIGKILL');
  await waitGone(() => aliveWith(pid, marker), 5000);
  return 'kill';
}

/** A TCP port on 127.0.0.1 nobody listens on right now (the caller's process binds it a moment later). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
