import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HIGH_WATER, StreamHub, type Subscriber } from '../../main/core/streams';
import { ConsoleFollowers, overlap, STREAM } from '../../main/services/vm/follow';
import type { VmConsoleChunk } from '../../shared/contract/vm';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}

/** A subscriber that records chunks and acknowledges only when told. */
function recorder(hub: StreamHub, id: string, autoAck: boolean) {
  const chunks: VmConsoleChunk[] = [];
  const sub: Subscriber = {
    unacked: new Map(),
    send: (_s, _k, data, bytes) => {
      chunks.push(data as VmConsoleChunk);
      if (autoAck) queueMicrotask(() => hub.ack(sub, STREAM, id, bytes));
    },
  };
  const unsubscribe = hub.subscribe(STREAM, id, sub);
  return { chunks, sub, unsubscribe, text: () => chunks.map((c) => c.text).join('') };
}

let dir: string;
let followers: ConsoleFollowers | null = null;
afterEach(() => {
  followers?.closeAll();
  followers = null;
  rmSync(dir, { recursive: true, force: true });
});

describe('console follower (file)', () => {
  it('returns the tail so far and then streams exactly what is appended, across a UTF-8 split', async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-follow-'));
    const file = join(dir, 'console.log');
    writeFileSync(file, 'one\ntwo\nthree\n');
    const hub = new StreamHub();
    followers = new ConsoleFollowers(hub, { intervalMs: 20 });
    const rec = recorder(hub, 'vm1', true);
    const tail = await followers.follow('vm1', { kind: 'file', path: file }, 2);
    expect(tail).toBe('two\nthree\n');
    const euro = Buffer.from('€');
    appendFileSync(file, Buffer.concat([Buffer.from('four '), euro.subarray(0, 1)]));
    await sleep(80);
    appendFileSync(file, Buffer.concat([euro.subarray(1), Buffer.from('\n')]));
    await until(() => rec.text() === 'four €\n');
    expect(rec.chunks.every((c) => !c.reset)).toBe(true);
  });

  it('pauses while a subscriber holds more than the high-water mark unacknowledged, and resumes on ack', async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-follow-'));
    const file = join(dir, 'console.log');
    writeFileSync(file, '');
    const hub = new StreamHub();
    followers = new ConsoleFollowers(hub, { intervalMs: 10 });
    const slow = recorder(hub, 'vm2', false);
    await followers.follow('vm2', { kind: 'file', path: file });
    const total = 2 * 1024 * 1024;
    appendFileSync(file, Buffer.alloc(total, 'x'));
    await until(() => hub.pressure(STREAM, 'vm2') > HIGH_WATER);
    await sleep(300);
    const held = slow.text().length;
    // one chunk (64 KiB) past the mark at most, nowhere near the 2 MiB written
    expect(held).toBeLessThanOrEqual(HIGH_WATER + 64 * 1024);
    expect(held).toBeLessThan(total);
    // the consumer catches up: ack everything it has, repeatedly, until all arrived
    await until(() => {
      hub.ack(slow.sub, STREAM, 'vm2', 1e9);
      return slow.text().length === total;
    }, 10_000);
    // control: without the ack loop above the follower would have stayed parked
  });

  it('sends reset when the file is truncated (a new boot) and continues from the start', async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-follow-'));
    const file = join(dir, 'console.log');
    writeFileSync(file, 'old boot line\n');
    const hub = new StreamHub();
    followers = new ConsoleFollowers(hub, { intervalMs: 20 });
    const rec = recorder(hub, 'vm3', true);
    await followers.follow('vm3', { kind: 'file', path: file });
    writeFileSync(file, 'new\n');
    await until(() => rec.chunks.some((c) => c.reset) && rec.text().endsWith('new\n'));
  });

  it('stops following after the grace period with no subscribers', async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-follow-'));
    const file = join(dir, 'console.log');
    writeFileSync(file, 'x\n');
    const hub = new StreamHub();
    followers = new ConsoleFollowers(hub, { intervalMs: 20, graceMs: 100 });
    const rec = recorder(hub, 'vm4', true);
    await followers.follow('vm4', { kind: 'file', path: file });
    expect(followers.active('vm4')).toBe(true);
    rec.unsubscribe();
    await until(() => !followers!.active('vm4'), 2000);
  });
});

describe('console follower (polling a remote manager)', () => {
  it('finds new lines by overlap with the last answer', () => {
    expect(overlap(['a', 'b', 'c'], ['b', 'c', 'd'])).toBe(2);
    expect(overlap(['a', 'b'], ['a', 'b'])).toBe(2);
    expect(overlap(['x', 'x'], ['x', 'x', 'y'])).toBe(2);
    expect(overlap(['a'], ['z'])).toBe(0);
    expect(overlap([], ['z'])).toBe(0);
  });

  it('streams only the lines added since the last poll', async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-follow-'));
    const hub = new StreamHub();
    followers = new ConsoleFollowers(hub, { intervalMs: 20 });
    const lines = ['boot 1', 'boot 2'];
    const rec = recorder(hub, 'r1', true);
    const tail = await followers.follow('r1', { kind: 'poll', fetch: async (n) => lines.slice(-n) });
    expect(tail).toBe('boot 1\r\nboot 2\r\n');
    lines.push('login:');
    await until(() => rec.text() === 'login:\r\n');
  });
});
