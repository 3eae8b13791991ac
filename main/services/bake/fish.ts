/**
 * One libguestfs appliance for a whole bake: guestfish kept open on a pipe, the guest's file
 * systems mounted by inspection (`-i`, read-write on the bake's private working copy), commands
 * written in batches as the bake needs them. Inspection and the install used to boot an appliance
 * each (guestfish, then virt-customize, which inspects again): ~29 s of a re-bake under TCG.
 *
 * guestfish answers each command as it comes (it flushes per command), so a marker echoed after
 * each command splits the answers. A command that fails ends guestfish with its error, unless it is
 * written with a leading `-`, which lets the session go on.
 */
import type { ChildProcess } from 'node:child_process';
import { AppError } from '../../../shared/contract/errors';
import { runGuestfs } from './tools';

const MARK = '@@povdesk@@';

/** guestfish script lines: each command followed by an echoed marker, so answers can be told apart. */
export function markedCommands(commands: string[]): string[] {
  return commands.flatMap((c) => [c, `echo ${MARK}`]);
}

/** What markedCommands' commands printed, split into each command's output (trailing newline cut). */
export function splitAnswers(out: string): string[] {
  return out.split(`${MARK}\n`).map((x) => x.replace(/\n$/, ''));
}

export class GuestSession {
  private out = '';
  private waiting: { end: string; resolve(answers: string[]): void; reject(e: Error): void } | null = null;
  private batches = 0;
  private ended: Error | null = null;
  private constructor(
    private readonly child: ChildProcess,
    private readonly done: Promise<string>,
    private readonly stop: AbortController,
  ) {
    child.stdout!.on('data', (d: Buffer) => {
      this.out += d.toString('utf8');
      this.answer();
    });
    done.then(
      () => this.fail(new AppError('internal', 'guestfish ended before it answered')),
      (e: Error) => this.fail(e),
    );
  }

  /** Boots the appliance on `disk` and mounts the guest by inspection (fails like `guestfish -i`). */
  static async open(disk: string, o: { signal?: AbortSignal; what?: string; hint?: string }): Promise<GuestSession> {
    const stop = new AbortController();
    const onAbort = () => stop.abort(o.signal?.reason);
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    // runGuestfs spawns before its first await, so onStart has run (or the spawn was refused) once it returns
    const started: { child?: ChildProcess } = {};
    const done = runGuestfs('guestfish', ['-a', disk, '-i'], {
      signal: stop.signal,
      what: o.what ?? 'guestfish',
      hint: o.hint,
      onStart: (child) => (started.child = child),
    });
    void done.catch(() => undefined).finally(() => o.signal?.removeEventListener('abort', onAbort));
    if (!started.child) {
      await done;
      throw new AppError('internal', 'guestfish did not start');
    }
    return new GuestSession(started.child, done, stop);
  }

  /**
   * Runs guestfish commands in order and resolves with each one's output (trailing newline cut).
   * Rejects with guestfish's error (and its output's tail) when a command without `-` fails.
   */
  run(commands: string[]): Promise<string[]> {
    if (this.ended) return Promise.reject(this.ended);
    if (this.waiting) return Promise.reject(new Error('one batch at a time'));
    const end = `${MARK}end-${++this.batches}`;
    const script = [...markedCommands(commands), `echo ${end}`].join('\n') + '\n';
    return new Promise((resolve, reject) => {
      this.waiting = { end, resolve, reject };
      this.child.stdin!.write(script);
    });
  }

  /** Unmounts, syncs and ends guestfish; resolves once it exited cleanly. */
  async close(): Promise<void> {
    if (this.ended) throw this.ended;
    this.child.stdin!.end('umount-all\nexit\n');
    await this.done;
  }

  /** Ends the session at once (the disk is thrown away): kills guestfish and its appliance. */
  async abort(): Promise<void> {
    this.stop.abort(new Error('bake ended'));
    await this.done.catch(() => undefined);
  }

  private answer() {
    const w = this.waiting;
    if (!w) return;
    const at = this.out.indexOf(`${w.end}\n`);
    if (at < 0) return;
    const answers = splitAnswers(this.out.slice(0, at)).slice(0, -1);
    this.out = this.out.slice(at + w.end.length + 1);
    this.waiting = null;
    w.resolve(answers);
  }

  private fail(e: Error) {
    this.ended ??= e;
    const w = this.waiting;
    this.waiting = null;
    w?.reject(e);
  }
}
