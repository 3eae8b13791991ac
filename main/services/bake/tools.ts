/**
 * Running the image tools (mmdebstrap, guestfish, virt-resize, qemu-img, apt-get) as child
 * processes: each in its own process group, so a cancel kills the tool and the QEMU appliance it
 * started; output kept (the tail goes into the error) and streamed line by line to the job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { processGroup } from '../../lib/procs';

export interface RunOptions {
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  input?: string;
  /** each output line as it comes (the job's live log) */
  onLine?: (line: string) => void;
  /** what failed, for the error message */
  what?: string;
  /** what the user can do about a failure */
  hint?: string;
  /** called with the process group's id just before a cancel signals it */
  beforeKill?: (pgid: number) => void;
  /** a tool kept open: called once it is spawned; its stdin stays open for the caller to write and end */
  onStart?: (child: ChildProcess) => void;
}

/**
 * libguestfs boots its own appliance under QEMU: direct backend (no libvirt), TCG forced because
 * /dev/kvm opens here but faults (docs/vm-manager.md, accelerator probe).
 */
export function guestfsEnv(accel: string | null = 'tcg'): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LIBGUESTFS_BACKEND: 'direct' };
  if (accel !== 'kvm') env.LIBGUESTFS_BACKEND_SETTINGS = 'force_tcg';
  return env;
}

const TAIL = 40;

export function run(cmd: string, args: string[], o: RunOptions = {}): Promise<string> {
  if (o.signal?.aborted) return Promise.reject(new AppError('cancelled', `${o.what ?? cmd} cancelled`));
  return new Promise((resolve, reject) => {
    const stdin = o.input === undefined && !o.onStart ? 'ignore' : 'pipe';
    const child = spawn(cmd, args, { env: o.env ?? process.env, cwd: o.cwd, detached: true, stdio: [stdin, 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const tail: string[] = [];
    let partial = '';
    const feed = (d: Buffer) => {
      partial += d.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        tail.push(l);
        if (tail.length > TAIL) tail.shift();
        o.onLine?.(l);
      }
    };
    child.stdout!.on('data', (d: Buffer) => {
      out.push(d);
      feed(d);
    });
    child.stderr!.on('data', feed);
    let killTimer: NodeJS.Timeout | null = null;
    const onAbort = () => {
      if (child.pid) o.beforeKill?.(child.pid);
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), 3000);
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      o.signal?.removeEventListener('abort', onAbort);
      reject(new AppError('unavailable', `${cmd} could not be started (${e.message}): install it (scripts/system-packages.txt)`));
    });
    child.on('close', (code, sig) => {
      o.signal?.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      // the group may still hold the appliance's QEMU: make sure nothing outlives the tool
      killGroup(child.pid, 'SIGKILL');
      if (partial) tail.push(partial);
      if (o.signal?.aborted) return reject(new AppError('cancelled', `${o.what ?? cmd} cancelled`));
      if (code === 0) return resolve(Buffer.concat(out).toString('utf8'));
      reject(
        new AppError(
          'internal',
          `${o.what ?? cmd} failed (${sig ?? `exit ${code}`})${o.hint ? `: ${o.hint}` : ''}\n${tail.slice(-15).join('\n')}`,
          {
            tail: tail.join('\n'),
          },
        ),
      );
    });
    if (child.stdin) {
      child.stdin.on('error', () => {}); // a tool that exits without reading its script: its exit code says why
      if (o.input !== undefined) child.stdin.end(o.input);
    }
    o.onStart?.(child);
  });
}

/**
 * A libguestfs tool (guestfish, virt-resize, virt-filesystems) that leaves nothing
 * behind when cancelled. Killed mid-run, libguestfs skips its own clean-up and leaves two folders
 * per appliance: its temp folder (overlays) and its socket folder. The temp folder goes into a
 * private scratch folder removed afterwards (LIBGUESTFS_TMPDIR; not TMPDIR, which would also move
 * the appliance cache and rebuild it every run), as does a non-root user's socket folder
 * (XDG_RUNTIME_DIR). Root's socket folder is always /tmp/libguestfsXXXXXX: it is read from the
 * appliance's QEMU command line before the cancel kills it, and removed after.
 */
export async function runGuestfs(cmd: string, args: string[], o: Omit<RunOptions, 'env' | 'beforeKill'> = {}): Promise<string> {
  const scratch = mkdtempSync(join(tmpdir(), 'povdesk-guestfs-'));
  const sockDirs = new Set<string>();
  try {
    return await run(cmd, args, {
      ...o,
      env: { ...guestfsEnv(), LIBGUESTFS_TMPDIR: scratch, XDG_RUNTIME_DIR: scratch },
      beforeKill: (pgid) => {
        for (const d of guestfsSocketDirs(pgid)) sockDirs.add(d);
      },
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    for (const d of sockDirs) removeSocketDir(d);
  }
}

const SOCK_DIR = /(\/[^,]*\/libguestfs[A-Za-z0-9]{6})\/guestfsd\.sock/;

/** The socket folders named on the command lines of a process group's members. */
export function guestfsSocketDirs(pgid: number): string[] {
  return [...new Set(processGroup(pgid).flatMap((p) => p.argv.flatMap((a) => SOCK_DIR.exec(a)?.[1] ?? [])))];
}

/** Only a folder that is libguestfs's by name and holds nothing but its sockets. */
function removeSocketDir(dir: string) {
  if (!/^libguestfs[A-Za-z0-9]{6}$/.test(basename(dir)) || !existsSync(dir)) return;
  try {
    if (readdirSync(dir).every((n) => /\.sock$/.test(n))) rmSync(dir, { recursive: true, force: true });
  } catch {
    // not ours to judge
  }
}

function killGroup(pid: number | undefined, sig: NodeJS.Signals) {
  if (!pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

export function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}

export function cancelled(signal: AbortSignal | undefined, what: string) {
  if (signal?.aborted) throw new AppError('cancelled', `${what} cancelled`);
}

/** A guestfish script word: double-quoted, with \ and " escaped (paths may hold spaces). */
export function fishWord(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
