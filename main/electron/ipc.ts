import type { IpcMain, IpcMainEvent, IpcMainInvokeEvent, WebContents } from 'electron';
import { AppError, toWireError } from '../../shared/contract';
import { IPC, clientMessage } from '../../shared/contract/transport';
import type { Core } from '../core/create';
import { StreamSession } from '../core/stream-session';

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
  const sessions = new Map<WebContents, StreamSession>();

  const forSender = (wc: WebContents) => {
    let session = sessions.get(wc);
    if (session) return session;
    session = new StreamSession(core.base.hub, (stream, key, data, bytes) => {
      if (!wc.isDestroyed()) wc.send(IPC.event, { t: 'event', stream, key, data, bytes });
    });
    sessions.set(wc, session);
    wc.once('destroyed', () => {
      session!.close();
      sessions.delete(wc);
    });
    return session;
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
    if (msg.data.t === 'call') return;
    // An unknown stream is dropped: the preload checks names before sending, so only a bug gets here.
    forSender(event.sender).handle(msg.data);
  };
  ipcMain.on(IPC.subscribe, streamMessage);
  ipcMain.on(IPC.unsubscribe, streamMessage);
  ipcMain.on(IPC.ack, streamMessage);
}
