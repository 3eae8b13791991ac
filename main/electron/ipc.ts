import type { IpcMain, IpcMainEvent, IpcMainInvokeEvent, WebContents } from 'electron';
import { AppError, isStreamName, streams, toWireError } from '../../shared/contract';
import { IPC, clientMessage } from '../../shared/contract/transport';
import type { Core } from '../core/create';
import type { Subscriber } from '../core/streams';

/**
 * Binds the contract to ipcMain. Every message is checked for its sender (the app's own main
 * frame, loaded from the app's own URL) before the dispatcher validates it against the schema.
 * Only the structural parts of Electron are used, so a test can drive it with a fake IpcMain.
 */
export function bindIpc(opts: {
  ipcMain: Pick<IpcMain, 'handle' | 'on'>;
  core: Core;
  isTrustedSender: (event: IpcMainEvent | IpcMainInvokeEvent) => boolean;
}): void {
  const { ipcMain, core, isTrustedSender } = opts;
  const subscribers = new Map<WebContents, { sub: Subscriber; unsubs: Map<string, () => void> }>();

  const forSender = (wc: WebContents) => {
    let entry = subscribers.get(wc);
    if (entry) return entry;
    const sub: Subscriber = {
      unacked: new Map(),
      send: (stream, key, data, bytes) => {
        if (wc.isDestroyed()) return;
        wc.send(IPC.event, { t: 'event', stream, key, data, bytes });
        if (isStreamName(stream) && streams[stream].ack === 'auto') core.base.hub.ack(sub, stream, key, bytes);
      },
    };
    entry = { sub, unsubs: new Map() };
    subscribers.set(wc, entry);
    wc.once('destroyed', () => {
      for (const u of entry!.unsubs.values()) u();
      subscribers.delete(wc);
    });
    return entry;
  };

  ipcMain.handle(IPC.call, async (event, payload: unknown) => {
    if (!isTrustedSender(event)) return { error: new AppError('forbidden', 'message from an untrusted frame').toWire() };
    const msg = clientMessage.safeParse(payload);
    if (!msg.success || msg.data.t !== 'call') {
      return { error: new AppError('invalid_request', 'malformed call message').toWire() };
    }
    try {
      return { result: await core.dispatcher.call(msg.data.method, msg.data.args, { transport: 'ipc' }) };
    } catch (err) {
      return { error: toWireError(err) };
    }
  });

  const streamMessage = (event: IpcMainEvent, payload: unknown) => {
    if (!isTrustedSender(event)) return;
    const msg = clientMessage.safeParse(payload);
    if (!msg.success) return;
    const m = msg.data;
    if (m.t === 'call' || !isStreamName(m.stream)) return;
    const entry = forSender(event.sender);
    const k = `${m.stream}\u0000${m.key}`;
    if (m.t === 'sub' && !entry.unsubs.has(k)) entry.unsubs.set(k, core.base.hub.subscribe(m.stream, m.key, entry.sub));
    if (m.t === 'unsub') {
      entry.unsubs.get(k)?.();
      entry.unsubs.delete(k);
    }
    if (m.t === 'ack') core.base.hub.ack(entry.sub, m.stream, m.key, m.bytes);
  };
  ipcMain.on(IPC.subscribe, streamMessage);
  ipcMain.on(IPC.unsubscribe, streamMessage);
  ipcMain.on(IPC.ack, streamMessage);
}
