import { describe, expect, it } from 'vitest';
import { ACK_EVERY, IN_FLIGHT, MAX_WRITE, termOutput, type TermSink } from '../../../renderer/src/state/termOutput';

/** A sink that parses only when told, like xterm's write queue, recording each write. */
function fakeXterm() {
  const writes: Uint8Array[] = [];
  const queue: (() => void)[] = [];
  const sink: TermSink = {
    write(data, parsed) {
      writes.push(data.slice());
      queue.push(parsed);
    },
  };
  return { sink, writes, queued: () => queue.length, parseOne: () => queue.shift()?.() };
}

const bytes = (n: number, v: number) => new Uint8Array(n).fill(v);

describe('termOutput: the terminal output path', () => {
  it('keeps at most two writes in xterm, joins what arrives meanwhile into one write, and acks parsed bytes once xterm has nothing left', () => {
    const x = fakeXterm();
    const acks: number[] = [];
    const push = termOutput(x.sink, (n) => acks.push(n));
    for (let i = 0; i < 10; i++) push(bytes(1000, i));
    expect(x.queued()).toBe(IN_FLIGHT);
    expect(x.writes.map((w) => w.length)).toEqual([1000, 1000]);
    expect(acks).toEqual([]);
    x.parseOne();
    // the eight that waited go in as one write, in order; nothing is acked while xterm still works
    expect(x.writes.map((w) => w.length)).toEqual([1000, 1000, 8000]);
    expect([...new Set(x.writes[2])]).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(acks).toEqual([]);
    x.parseOne();
    expect(acks).toEqual([]);
    x.parseOne();
    expect(acks).toEqual([10_000]);
    expect(x.queued()).toBe(0);
    // a lone keystroke's echo is acked as soon as it is parsed
    push(bytes(3, 1));
    x.parseOne();
    expect(acks).toEqual([10_000, 3]);
  });

  it('cuts a large arrival into pieces of MAX_WRITE and puts the whole of it through, in order', () => {
    const x = fakeXterm();
    const acks: number[] = [];
    const push = termOutput(x.sink, (n) => acks.push(n));
    const big = new Uint8Array(MAX_WRITE * 2 + 10);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    push(big);
    expect(x.writes.map((w) => w.length)).toEqual([MAX_WRITE, MAX_WRITE]);
    x.parseOne();
    expect(x.writes.at(-1)!.length).toBe(10);
    while (x.queued()) x.parseOne();
    const all = new Uint8Array(x.writes.reduce((n, w) => n + w.length, 0));
    let at = 0;
    for (const w of x.writes) (all.set(w, at), (at += w.length));
    expect(Buffer.from(all).equals(Buffer.from(big))).toBe(true);
    expect(acks.reduce((a, b) => a + b, 0)).toBe(big.length);
  });

  it('acks a flood in batches of at least ACK_EVERY while xterm stays busy, never more than it parsed', () => {
    const x = fakeXterm();
    const acks: number[] = [];
    const push = termOutput(x.sink, (n) => acks.push(n));
    let pushed = 0;
    let parsedBytes = 0;
    for (let i = 0; i < 200; i++) {
      push(bytes(64 * 1024, i % 256));
      pushed += 64 * 1024;
      if (i % 2) {
        parsedBytes += x.writes[x.writes.length - x.queued()]!.length;
        x.parseOne();
      }
      expect(acks.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(parsedBytes);
    }
    while (x.queued()) x.parseOne();
    expect(acks.slice(0, -1).every((n) => n >= ACK_EVERY)).toBe(true);
    expect(acks.length).toBeLessThan(pushed / ACK_EVERY + 2);
    expect(acks.reduce((a, b) => a + b, 0)).toBe(pushed);
  });
});
