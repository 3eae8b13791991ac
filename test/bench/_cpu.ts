// CPU accounting for the terminal benches (Linux /proc): where the CPU seconds of a transfer went,
// by process kind, so a throughput ratio can be read against what the machine's cores can give.
// Used by bench ssh-ui; the runner skips files starting with _.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds by kind. */
export type CpuUse = Record<Kind, number>;
/** CPU seconds so far of each process counted, by pid (a snapshot). */
export type CpuSnapshot = Map<number, CpuUse>;
type Kind = 'rendererMain' | 'rendererOther' | 'gpu' | 'browser' | 'host' | 'sshd';
const KINDS: Kind[] = ['rendererMain', 'rendererOther', 'gpu', 'browser', 'host', 'sshd'];
const LABEL: Record<Kind, string> = {
  rendererMain: "renderer's main thread",
  rendererOther: 'renderer, other threads',
  gpu: 'GPU process',
  browser: 'browser + network service',
  host: 'host',
  sshd: 'sshd and the shell',
};
const none = (): CpuUse => ({ rendererMain: 0, rendererOther: 0, gpu: 0, browser: 0, host: 0, sshd: 0 });

interface Proc {
  pid: number;
  ppid: number;
  cmd: string;
  /** utime + stime, and what its reaped children used (cat runs and exits: its shell keeps it). */
  self: number;
  reaped: number;
}

const TICK = 100; // USER_HZ on Linux

function stat(path: string): { ppid: number; self: number; reaped: number } | null {
  try {
    const st = readFileSync(path, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), self: (Number(f[11]) + Number(f[12])) / TICK, reaped: (Number(f[13]) + Number(f[14])) / TICK };
  } catch {
    return null;
  }
}

function procs(): Proc[] {
  const out: Proc[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = stat(`/proc/${d}/stat`);
    if (!s) continue;
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    out.push({ pid: Number(d), cmd, ...s });
  }
  return out;
}

/**
 * CPU seconds used so far by the Chromium this process launched (its processes by their `--type=`
 * switch, the renderer's main thread apart), the host process `hostPid`, and the sshd listener's
 * descendants (the session's sshd, its shell and, once reaped, `cat`).
 */
export function cpuSnapshot(hostPid: number | null, sshdPid: number | null): CpuSnapshot {
  const all = procs();
  const snap: CpuSnapshot = new Map();
  const add = (pid: number, kind: Kind, secs: number) => {
    const u = snap.get(pid) ?? none();
    u[kind] += secs;
    snap.set(pid, u);
  };
  const children = new Map<number, Proc[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const descendants = (pid: number): Proc[] => (children.get(pid) ?? []).flatMap((c) => [c, ...descendants(c.pid)]);
  for (const p of descendants(process.pid)) {
    if (p.pid === hostPid) add(p.pid, 'host', p.self);
    else if (!p.cmd.includes('chromium')) continue;
    else if (p.cmd.includes('--type=renderer')) {
      const main = stat(`/proc/${p.pid}/task/${p.pid}/stat`)?.self ?? 0;
      add(p.pid, 'rendererMain', main);
      add(p.pid, 'rendererOther', p.self - main);
    } else if (p.cmd.includes('--type=gpu')) add(p.pid, 'gpu', p.self);
    else add(p.pid, 'browser', p.self); // the browser process and its utility processes (network service)
  }
  if (sshdPid !== null) for (const p of descendants(sshdPid)) add(p.pid, 'sshd', p.self + p.reaped);
  return snap;
}

/** What each process still alive used between two snapshots (one that ended in between is left out). */
export function cpuSince(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const d = none();
  for (const [pid, u] of after) for (const k of KINDS) d[k] += Math.max(0, u[k] - (before.get(pid)?.[k] ?? 0));
  return d;
}

export const total = (u: CpuUse) => KINDS.reduce((n, k) => n + u[k], 0);

/** "renderer's main thread 3.21, … = 8.70 CPU s per 100 MB" for `mb` megabytes moved. */
export function describeCpu(u: CpuUse, mb: number): string {
  const per = (x: number) => ((x / mb) * 100).toFixed(2);
  return `${KINDS.filter((k) => u[k] > 0.005)
    .map((k) => `${LABEL[k]} ${per(u[k])}`)
    .join(', ')} = ${per(total(u))} CPU s per 100 MB`;
}

/**
 * The least wall time `u` allows on `cores` cores: every core busy, no process waiting for
 * another, and the renderer's main thread (one thread) never faster than its own CPU time.
 */
export function leastWall(u: CpuUse, cores: number): number {
  return Math.max(u.rendererMain, total(u) / cores);
}
