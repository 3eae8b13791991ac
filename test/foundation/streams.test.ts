import { describe, expect, it } from 'vitest';
import { LOW_WATER, StreamHub, type Subscriber } from '../../main/core/streams';

const sink = () => {
  const got: { key: string; data: unknown; bytes: number }[] = [];
  const sub: Subscriber = { unacked: new Map(), send: (_s, key, data, bytes) => got.push({ key, data, bytes }) };
  return { sub, got };
};

describe('StreamHub', () => {
  it('delivers to subscribers of the key and of *, and counts unacknowledged bytes per subscriber', () => {
    const hub = new StreamHub();
    const one = sink();
    const all = sink();
    hub.subscribe('ssh.data', 'a', one.sub);
    hub.subscribe('ssh.data', '*', all.sub);
    hub.publish('ssh.data', 'a', 'x', 1000);
    hub.publish('ssh.data', 'b', 'y', 10);
    expect(one.got.map((g) => g.key)).toEqual(['a']);
    expect(all.got.map((g) => g.key)).toEqual(['a', 'b']);
    expect(hub.pressure('ssh.data', 'a')).toBe(1000);
    hub.ack(one.sub, 'ssh.data', 'a', 600);
    expect(hub.pressure('ssh.data', 'a')).toBe(400);
    expect(hub.subscriberCount('ssh.data', 'a')).toBe(2);
  });

  it('onDrain fires once when pressure falls to the mark, default or given', async () => {
    const hub = new StreamHub();
    const s = sink();
    hub.subscribe('ssh.data', 'k', s.sub);
    hub.publish('ssh.data', 'k', null, 300_000);
    const fired: string[] = [];
    hub.onDrain('ssh.data', 'k', () => fired.push('low'));
    hub.onDrain('ssh.data', 'k', () => fired.push('high'), 200_000);
    hub.ack(s.sub, 'ssh.data', 'k', 50_000);
    expect(fired).toEqual([]);
    hub.ack(s.sub, 'ssh.data', 'k', 60_000);
    expect(fired).toEqual(['high']);
    hub.ack(s.sub, 'ssh.data', 'k', 190_000 - LOW_WATER);
    expect(fired).toEqual(['high', 'low']);
    hub.ack(s.sub, 'ssh.data', 'k', LOW_WATER);
    expect(fired).toEqual(['high', 'low']);
    let now = false;
    hub.onDrain('ssh.data', 'k', () => (now = true));
    await Promise.resolve();
    expect(now).toBe(true);
  });

  it('an unsubscribed slow consumer no longer holds the producer back', () => {
    const hub = new StreamHub();
    const slow = sink();
    const stop = hub.subscribe('ssh.data', 'k', slow.sub);
    hub.publish('ssh.data', 'k', null, 500_000);
    let drained = false;
    hub.onDrain('ssh.data', 'k', () => (drained = true));
    stop();
    expect(drained).toBe(true);
    expect(hub.pressure('ssh.data', 'k')).toBe(0);
  });

  it('domain events reach their subscribers in order; a failing one is reported and does not stop the rest; off unsubscribes', () => {
    const failed: string[] = [];
    const hub = new StreamHub((event, err) => failed.push(`${event}: ${(err as Error).message}`));
    const got: string[] = [];
    hub.on('pov.changed', ({ povId }) => got.push(`a ${povId}`));
    hub.on('pov.changed', () => {
      throw new Error('boom');
    });
    const off = hub.on('pov.changed', ({ povId }) => got.push(`c ${povId}`));
    hub.emit('pov.changed', { povId: 'p1' });
    off();
    hub.emit('pov.changed', { povId: 'p2' });
    expect(got).toEqual(['a p1', 'c p1', 'a p2']);
    expect(failed).toEqual(['pov.changed: boom', 'pov.changed: boom']);
  });
});
