import type { StreamName } from '../../shared/contract';
import { streamKey } from '../../shared/stream-listeners';
import { LOW_WATER, type DomainEvent, type DomainEvents, type Hub } from '../services/hub';

export { HIGH_WATER, LOW_WATER } from '../services/hub';

export interface Subscriber {
  /** Delivers one event; the transport serialises it. */
  send(stream: string, key: string, data: unknown, bytes: number): void;
  /** Manual-ack streams count unacknowledged bytes per subscriber. */
  unacked: Map<string, number>;
}

const id = streamKey;

/**
 * Routes stream events from producers (jobs, console tails, ssh sessions) to subscribed
 * transports, and tracks unacknowledged bytes so a producer can pause while a slow consumer
 * catches up. Events for key K also reach subscribers of '*' on the same stream.
 */
export class StreamHub implements Hub {
  private readonly subs = new Map<string, Set<Subscriber>>();
  private readonly drains = new Map<string, { cb: () => void; below: number }[]>();
  private readonly listeners = new Map<DomainEvent, Set<(data: never) => void>>();

  constructor(private readonly onListenerError: (event: DomainEvent, err: unknown) => void = () => {}) {}

  emit<E extends DomainEvent>(event: E, data: DomainEvents[E]): void {
    for (const fn of [...(this.listeners.get(event) ?? [])]) {
      try {
        (fn as (d: DomainEvents[E]) => void)(data);
      } catch (err) {
        this.onListenerError(event, err);
      }
    }
  }

  on<E extends DomainEvent>(event: E, fn: (data: DomainEvents[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn as (data: never) => void);
    return () => set!.delete(fn as (data: never) => void);
  }

  subscribe(stream: StreamName | string, key: string, sub: Subscriber): () => void {
    const k = id(stream, key);
    let set = this.subs.get(k);
    if (!set) this.subs.set(k, (set = new Set()));
    set.add(sub);
    return () => {
      set!.delete(sub);
      sub.unacked.delete(k);
      if (set!.size === 0) this.subs.delete(k);
      this.checkDrain(stream, key);
    };
  }

  subscriberCount(stream: StreamName | string, key: string): number {
    return (this.subs.get(id(stream, key))?.size ?? 0) + (key === '*' ? 0 : (this.subs.get(id(stream, '*'))?.size ?? 0));
  }

  publish(stream: StreamName | string, key: string, data: unknown, bytes?: number): void {
    const size = bytes ?? JSON.stringify(data ?? null).length;
    const k = id(stream, key);
    for (const target of [this.subs.get(k), key === '*' ? undefined : this.subs.get(id(stream, '*'))]) {
      if (!target) continue;
      for (const sub of target) {
        sub.unacked.set(k, (sub.unacked.get(k) ?? 0) + size);
        try {
          sub.send(stream, key, data, size);
        } catch {
          // a broken transport is cleaned up by its own close handler
        }
      }
    }
  }

  /** Records that a subscriber has consumed `bytes` of (stream, key). */
  ack(sub: Subscriber, stream: string, key: string, bytes: number): void {
    const k = id(stream, key);
    const left = Math.max(0, (sub.unacked.get(k) ?? 0) - bytes);
    sub.unacked.set(k, left);
    this.checkDrain(stream, key);
  }

  /** Largest number of unacknowledged bytes any subscriber of (stream, key) holds. */
  pressure(stream: StreamName | string, key: string): number {
    const set = this.subs.get(id(stream, key));
    if (!set) return 0;
    let max = 0;
    for (const s of set) max = Math.max(max, s.unacked.get(id(stream, key)) ?? 0);
    return max;
  }

  /**
   * Calls cb once, when pressure on (stream, key) falls to `below` (default: the low-water mark), or
   * at once if it already has. A producer that keeps several events in flight resumes at a higher
   * mark so the consumer never waits on a round trip.
   */
  onDrain(stream: StreamName | string, key: string, cb: () => void, below: number = LOW_WATER): void {
    if (this.pressure(stream, key) <= below) {
      queueMicrotask(cb);
      return;
    }
    const k = id(stream, key);
    const list = this.drains.get(k) ?? [];
    list.push({ cb, below });
    this.drains.set(k, list);
  }

  private checkDrain(stream: string, key: string) {
    const k = id(stream, key);
    const list = this.drains.get(k);
    if (!list) return;
    const pressure = this.pressure(stream, key);
    const ready = list.filter((d) => pressure <= d.below);
    if (ready.length === 0) return;
    const waiting = list.filter((d) => pressure > d.below);
    if (waiting.length) this.drains.set(k, waiting);
    else this.drains.delete(k);
    for (const d of ready) d.cb();
  }
}
