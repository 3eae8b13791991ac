/**
 * Stream keys and the listener sets both renderer-side transports keep (the preload's IPC bridge and
 * browser mode's WebSocket client). A subscription is named by (stream, key); a listener of key '*'
 * hears every key of its stream. (No zod, no DOM, no Node: the preload and the renderer import it.)
 */

/** The one spelling of a (stream, key) pair as a single map key. Neither part may contain NUL. */
export function streamKey(stream: string, key: string): string {
  return `${stream}\u0000${key}`;
}

export type StreamListener = (data: unknown, bytes: number) => void;

/** What happens on the wire when a (stream, key) gains its first listener or loses its last. */
export interface ListenerHooks {
  first?: () => void;
  last?: () => void;
}

/** Listeners by (stream, key): the transport subscribes once per pair, however many listen. */
export class StreamListeners {
  private readonly sets = new Map<string, { stream: string; key: string; fns: Set<StreamListener> }>();

  /** Adds fn; returns the function that removes it (calling it twice does nothing more). */
  add(stream: string, key: string, fn: StreamListener, hooks: ListenerHooks = {}): () => void {
    const k = streamKey(stream, key);
    let entry = this.sets.get(k);
    const first = !entry;
    if (!entry) this.sets.set(k, (entry = { stream, key, fns: new Set() }));
    const fns = entry.fns;
    // A second add of the same function would share one entry and so one removal: wrap it.
    const own: StreamListener = (d, b) => fn(d, b);
    fns.add(own);
    if (first) hooks.first?.();
    return () => {
      if (!fns.delete(own) || fns.size > 0) return;
      if (this.sets.get(k)?.fns === fns) this.sets.delete(k);
      hooks.last?.();
    };
  }

  has(stream: string, key: string): boolean {
    return this.sets.has(streamKey(stream, key));
  }

  /** Every (stream, key) with at least one listener (what a reconnecting transport subscribes again). */
  pairs(): { stream: string; key: string }[] {
    return [...this.sets.values()].map(({ stream, key }) => ({ stream, key }));
  }

  /** Hands an event to the listeners of exactly (stream, key). */
  deliverExact(stream: string, key: string, data: unknown, bytes: number): void {
    const entry = this.sets.get(streamKey(stream, key));
    if (entry) for (const fn of [...entry.fns]) fn(data, bytes);
  }

  /** Hands an event to the listeners of (stream, key) and of (stream, '*'). */
  deliver(stream: string, key: string, data: unknown, bytes: number): void {
    this.deliverExact(stream, key, data, bytes);
    if (key !== '*') this.deliverExact(stream, '*', data, bytes);
  }
}
