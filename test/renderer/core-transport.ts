import { isStreamName, streams, toWireError } from '../../shared/contract';
import type { Core } from '../../main/core/create';
import type { Subscriber } from '../../main/core/streams';
import type { Transport } from '../../renderer/src/transport';

/** A renderer transport wired straight to a real core in the same process (no socket). */
export function coreTransport(core: Core): Transport {
  const listeners = new Map<string, Set<(d: unknown, b: number) => void>>();
  const unsubs = new Map<string, () => void>();
  const sub: Subscriber = {
    unacked: new Map(),
    send: (stream, key, data, bytes) => {
      for (const k of [`${stream}\u0000${key}`, `${stream}\u0000*`]) for (const fn of listeners.get(k) ?? []) fn(data, bytes);
      if (isStreamName(stream) && streams[stream].ack === 'auto') core.base.hub.ack(sub, stream, key, bytes);
    },
  };
  return {
    transport: 'ws',
    call: async (method, args) => {
      try {
        return await core.dispatcher.call(method, args, { transport: 'test' });
      } catch (e) {
        const w = toWireError(e);
        throw Object.assign(new Error(w.message), { code: w.code, detail: w.detail }); // as renderer/src/transport.ts does
      }
    },
    subscribe: (stream, key, fn) => {
      const k = `${stream}\u0000${key}`;
      if (!listeners.has(k)) {
        listeners.set(k, new Set());
        unsubs.set(k, core.base.hub.subscribe(stream, key, sub));
      }
      listeners.get(k)!.add(fn);
      return () => listeners.get(k)?.delete(fn);
    },
    ack: (stream, key, bytes) => core.base.hub.ack(sub, stream, key, bytes),
  };
}
