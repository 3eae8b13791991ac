import type { JobRecord, StreamData, StreamName } from '../../shared/contract';

/**
 * What one domain tells the others inside this process (never on the wire, so not a contract
 * stream): the cross-domain reactions. The producer emits; each service that reacts subscribes in
 * its own constructor, so the composition root (main/core/create.ts) wires no reaction itself.
 */
export interface DomainEvents {
  /** A job's snapshot changed (the JobRunner emits every change, after it is committed). */
  'job.changed': JobRecord;
  /** A service wrote a POV's row outside that POV's job; `pov.updated` follows if its view changed. */
  'pov.changed': { povId: string };
}
export type DomainEvent = keyof DomainEvents;

/**
 * What a service needs to publish stream events (job snapshots, console output, terminal bytes)
 * and to pace itself by its consumers. Services take one as a constructor argument; the app's is
 * the StreamHub (main/core/streams.ts). Services never import main/core (test/foundation/layers.test.ts).
 */
export interface Hub {
  /** Delivers one event to the subscribers of (stream, key) and of (stream, '*'); bytes default to its JSON length. */
  publish<S extends StreamName>(stream: S, key: string, data: StreamData<S>, bytes?: number): void;
  /** Subscribers of (stream, key), counting those of (stream, '*'). */
  subscriberCount(stream: StreamName, key: string): number;
  /** Largest number of unacknowledged bytes any subscriber of (stream, key) holds. */
  pressure(stream: StreamName, key: string): number;
  /** Calls cb once, when pressure on (stream, key) falls to `below` (default LOW_WATER), or at once if it already has. */
  onDrain(stream: StreamName, key: string, cb: () => void, below?: number): void;
  /** Tells every subscriber of `event`, in the order they subscribed; a subscriber's failure is not the emitter's. */
  emit<E extends DomainEvent>(event: E, data: DomainEvents[E]): void;
  /** Subscribes to `event`; returns the unsubscribe function. */
  on<E extends DomainEvent>(event: E, fn: (data: DomainEvents[E]) => void): () => void;
}

/** The part of the hub a service that only reacts or only announces needs. */
export type Events = Pick<Hub, 'emit' | 'on'>;

/** Unacknowledged bytes above which a producer stops reading until the hub reports a drain. */
export const HIGH_WATER = 100_000;
/** The pressure at or below which a drain is reported by default. */
export const LOW_WATER = 5_000;
