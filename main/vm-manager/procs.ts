/**
 * Detached processes (own process group, so VMs outlive the manager), pid files, and liveness
 * checks through /proc that also confirm the pid still belongs to the program we started.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';

export interface Started {
  pid: number;
  /** Resolves with the exit when this process is our child; reattached processes are polled instead. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a program in its own process group with stdout/stderr appended to logFile. */
export function startDetached(cmd: string, args: string[], logFile: string): Started {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd] });
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

/** Reads /proc/<pid>/cmdline; null when there is no such process or it is a zombie. */
export function procCmdline(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return null;
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((s) => s !== '');
  } catch {
    return null;
  }
}

/** Pids whose argv holds every marker (a /proc scan). */
export function pidsMatching(markers: string[]): number[] {
  const out: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const argv = procCmdline(Number(e));
    if (argv && markers.every((m) => argv.some((a) => a.includes(m)))) out.push(Number(e));
  }
  return out;
}

/** True when pid runs and its argv contains `marker` (guards against pid reuse). */
export function aliveWith(pid: number | null | undefined, marker: string): boolean {
  if (!pid || pid <= 0) return false;
  const argv = procCmdline(pid);
  return argv !== null && argv.some((a) => a.includes(marker));
}

export function writePid(file: string, pid: number): void {
  writeFileSync(file, `${pid}\n`);
}

export function readPid(file: string): number | null {
  if (!existsSync(file)) return null;
  const n = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
  return Number.isInteger(n) && n > 0 ? n : null;
}

export function removePid(file: string): void {
  rmSync(file, { force: true });
}

export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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
