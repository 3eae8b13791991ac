import { contextBridge, ipcRenderer } from 'electron';
import { isMethodName, isStreamName, fromWireError, type WireError } from '../shared/contract';
import { IPC } from '../shared/contract/transport';
import { StreamListeners, type StreamListener } from '../shared/stream-listeners';

const listeners = new StreamListeners();
let nextId = 1;

ipcRenderer.on(IPC.event, (_e, msg: { stream: string; key: string; data: unknown; bytes: number }) => {
  listeners.deliver(msg.stream, msg.key, msg.data, msg.bytes);
});

/**
 * window.povdesk: the contract's three verbs and nothing else. Method and stream names are checked
 * against the contract here too, so a compromised renderer cannot reach an arbitrary channel.
 */
const api = {
  transport: 'ipc' as const,
  async call(method: string, args: unknown): Promise<unknown> {
    if (!isMethodName(method)) throw new Error(`unknown method ${method}`);
    const reply = (await ipcRenderer.invoke(IPC.call, { t: 'call', id: nextId++, method, args })) as
      { result: unknown } | { error: WireError };
    if ('error' in reply) {
      const e = fromWireError(reply.error);
      // Errors cross contextBridge as plain objects; keep code and detail visible.
      throw Object.assign(new Error(e.message), { code: e.code, detail: e.detail });
    }
    return reply.result;
  },
  subscribe(stream: string, key: string, fn: StreamListener): () => void {
    if (!isStreamName(stream)) throw new Error(`unknown stream ${stream}`);
    return listeners.add(stream, key, fn, {
      first: () => ipcRenderer.send(IPC.subscribe, { t: 'sub', stream, key }),
      last: () => ipcRenderer.send(IPC.unsubscribe, { t: 'unsub', stream, key }),
    });
  },
  ack(stream: string, key: string, bytes: number): void {
    if (!isStreamName(stream)) return;
    ipcRenderer.send(IPC.ack, { t: 'ack', stream, key, bytes });
  },
};

contextBridge.exposeInMainWorld('povdesk', api);
