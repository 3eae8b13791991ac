import { describe, expect, it } from 'vitest';
import { ACK_EVERY, termOutput, type TermSink } from '../../../renderer/src/state/term-output';

/** A sink that parses only when told, like xterm's write queue, recording each write. */
function fakeXterm() {
  const writes: Uint8Array[] = [];
  const queue: (() => void)[] = [];
  const sink: TermSink = {
    write(data, parsed) {
      writes.push(data);
      queue.push(parsed);
    },
  };
  return { sink, writes, queued: () => queue.length, parseOne: () => queue.shift()?.() };
}

const bytes = (n: number, v: number) => new Uint8Array(n).fill(v);

describe('termOutput: the terminal output path', () => {
  it('writes each chunk as it comes, in order, and acks parsed bytes once xterm has nothing left', () => {
    const x = fakeXterm();
    const acks: number[] = [];
    const push = termOutput(x.sink, (n) => acks.push(n));
    for (let i = 0; i < 10; i++) push(bytes(1000, i));
    expect(x.writes.map((w) => w[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (let i = 0; i < 9; i++) x.parseOne();
    expect(acks).toEqual([]); // xterm still has one to parse
    x.parseOne();
    expect(acks).toEqual([10_000]);
    // a lone keystroke's echo is acked as soon as it is parsed
    push(bytes(3, 1));
    x.parseOne();
    expect(acks).toEqual([10_000, 3]);
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
    expect(acks.length).toBeGreaterThan(0);
    expect(acks.every((n) => n >= ACK_EVERY)).toBe(true);
    while (x.queued()) x.parseOne();
    expect(acks.length).toBeLessThan(pushed / ACK_EVERY + 2);
    expect(acks.reduce((a, b) => a + b, 0)).toBe(pushed);
  });
});
