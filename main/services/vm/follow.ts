/**
 * Follows a VM console onto the `vm.console` stream (keyed by VM id), flow-controlled: while a
 * subscriber holds more than HIGH_WATER unacknowledged bytes the follower stops reading until the
 * hub reports a drain. A local manager's console file is tailed by byte offset (exact); a remote
 * manager's console endpoint is polled and the new lines found by overlap with the last answer.
 * A follower stops a few seconds after its last subscriber left.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { VmConsoleChunk } from '../../../shared/contract/vm';
import { sleep } from '../../lib/sleep';
import { HIGH_WATER, type Hub } from '../hub';

export const STREAM = 'vm.console';
const CHUNK = 64 * 1024;

export type ConsoleSource = { kind: 'file'; path: string } | { kind: 'poll'; fetch: (lines: number) => Promise<string[]> };

interface Follower {
  stop(): void;
  /** The last `lines` lines up to the point the stream continues from. */
  snapshot(lines: number): Promise<string>;
}

export interface FollowOptions {
  intervalMs?: number;
  /** how long a follower lives without subscribers */
  graceMs?: number;
}

/** Reads up to `max` bytes of `file` ending at `end`. */
function readRange(file: string, start: number, end: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(Math.max(0, end - start));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function lastLines(text: string, lines: number): string {
  const parts = text.split('\n');
  if (parts.length && parts[parts.length - 1] === '') parts.pop();
  return parts.slice(-lines).join('\n') + (parts.length ? '\n' : '');
}

/** Index k such that cur[0..k) repeats the end of prev (the longest such overlap). */
export function overlap(prev: string[], cur: string[]): number {
  for (let k = Math.min(prev.length, cur.length); k > 0; k--) {
    let same = true;
    for (let i = 0; i < k; i++) {
      if (prev[prev.length - k + i] !== cur[i]) {
        same = false;
        break;
      }
    }
    if (same) return k;
  }
  return 0;
}

export class ConsoleFollowers {
  private readonly followers = new Map<string, Follower>();

  constructor(
    private readonly hub: Hub,
    private readonly opts: FollowOptions = {},
  ) {}

  /** Starts (or keeps) the follower of VM `id`; returns the tail the stream continues from. */
  async follow(id: string, source: ConsoleSource, lines = 200): Promise<string> {
    let f = this.followers.get(id);
    if (!f) {
      f = source.kind === 'file' ? this.fileFollower(id, source.path) : this.pollFollower(id, source.fetch);
      this.followers.set(id, f);
    }
    return f.snapshot(lines);
  }

  active(id: string): boolean {
    return this.followers.has(id);
  }

  closeAll(): void {
    for (const f of this.followers.values()) f.stop();
    this.followers.clear();
  }

  private publish(id: string, chunk: VmConsoleChunk) {
    this.hub.publish(STREAM, id, chunk, Buffer.byteLength(chunk.text) || 1);
  }

  private waitDrain(id: string): Promise<void> {
    return new Promise((r) => this.hub.onDrain(STREAM, id, r));
  }

  /** True while someone listens, or within the grace period after the last one left. */
  private keepGoing(id: string, state: { lonelySince: number | null; stopped: boolean }): boolean {
    if (state.stopped) return false;
    if (this.hub.subscriberCount(STREAM, id) > 0) {
      state.lonelySince = null;
      return true;
    }
    state.lonelySince ??= Date.now();
    return Date.now() - state.lonelySince < (this.opts.graceMs ?? 5000);
  }

  private fileFollower(id: string, path: string): Follower {
    const interval = this.opts.intervalMs ?? 250;
    const state = { lonelySince: null as number | null, stopped: false };
    let offset = 0;
    let ino = -1;
    try {
      const st = statSync(path);
      offset = st.size;
      ino = st.ino;
    } catch {
      // not written yet: start at 0
    }
    let decoder = new StringDecoder('utf8');
    const loop = async () => {
      while (this.keepGoing(id, state)) {
        if (this.hub.pressure(STREAM, id) > HIGH_WATER) {
          await this.waitDrain(id);
          continue;
        }
        let size: number;
        try {
          const st = statSync(path);
          if (st.ino !== ino || st.size < offset) {
            if (ino !== -1) this.publish(id, { id, text: '', reset: true });
            ino = st.ino;
            offset = 0;
            decoder = new StringDecoder('utf8');
          }
          size = st.size;
        } catch {
          size = -1;
        }
        if (size > offset) {
          const end = Math.min(size, offset + CHUNK);
          const buf = readRange(path, offset, end);
          offset += buf.length;
          const text = decoder.write(buf);
          if (text) this.publish(id, { id, text, reset: false });
          if (offset < size) continue;
        }
        await sleep(interval);
      }
      this.followers.delete(id);
    };
    void loop();
    return {
      stop: () => {
        state.stopped = true;
      },
      snapshot: async (lines) => {
        if (offset === 0) return '';
        const start = Math.max(0, offset - 256 * 1024);
        const text = readRange(path, start, offset).toString('utf8');
        return lastLines(start > 0 ? text.slice(text.indexOf('\n') + 1) : text, lines);
      },
    };
  }

  private pollFollower(id: string, fetch: (lines: number) => Promise<string[]>): Follower {
    const interval = this.opts.intervalMs ?? 1000;
    const state = { lonelySince: null as number | null, stopped: false };
    let prev: string[] | null = null;
    let first: Promise<void> | null = null;
    const tick = async () => {
      const cur = await fetch(1000);
      if (prev === null) {
        prev = cur;
        return;
      }
      const k = overlap(prev, cur);
      if (k === 0 && prev.length > 0 && cur.length > 0) this.publish(id, { id, text: cur.join('\r\n') + '\r\n', reset: true });
      else if (cur.length > k) this.publish(id, { id, text: cur.slice(k).join('\r\n') + '\r\n', reset: false });
      prev = cur;
    };
    const loop = async () => {
      while (this.keepGoing(id, state)) {
        if (this.hub.pressure(STREAM, id) > HIGH_WATER) {
          await this.waitDrain(id);
          continue;
        }
        try {
          await tick();
        } catch {
          // the manager may be restarting; try again next round
        }
        await sleep(interval);
      }
      this.followers.delete(id);
    };
    first = tick()
      .catch(() => undefined)
      .then(() => void loop());
    return {
      stop: () => {
        state.stopped = true;
      },
      snapshot: async (lines) => {
        await first;
        return prev ? prev.slice(-lines).join('\r\n') + (prev.length ? '\r\n' : '') : '';
      },
    };
  }
}
