import { isStreamName, streams, toWireError } from '../../shared/contract';
import type { Core } from '../../main/core/create';
import type { Subscriber } from '../../main/core/streams';
import type { Transport } from '../../renderer/src/transport';
import { StreamListeners, streamKey } from '../../shared/stream-listeners';

/** A renderer transport wired straight to a real core in the same process (no socket). */
export function coreTransport(core: Core): Transport {
  const listeners = new StreamListeners();
  const unsubs = new Map<string, () => void>();
  const sub: Subscriber = {
    unacked: new Map(),
    send: (stream, key, data, bytes) => {
      listeners.deliver(stream, key, data, bytes);
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
      const k = streamKey(stream, key);
      return listeners.add(stream, key, fn, {
        first: () => unsubs.set(k, core.base.hub.subscribe(stream, key, sub)),
        last: () => {
          unsubs.get(k)?.();
          unsubs.delete(k);
        },
      });
    },
    ack: (stream, key, bytes) => core.base.hub.ack(sub, stream, key, bytes),
  };
}
