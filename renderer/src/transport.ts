import { fromWireError, type WireError } from '../../shared/contract/errors';
import { decodeBinaryEvent, WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/wire';
import type { ServerMessage } from '../../shared/contract/transport';

export type Listener = (data: unknown, bytes: number) => void;

/** What the renderer needs from a transport: window.povdesk (Electron) or the WebSocket client. */
export interface Transport {
  transport: 'ipc' | 'ws';
  call(method: string, args: unknown): Promise<unknown>;
  subscribe(stream: string, key: string, fn: Listener): () => void;
  ack(stream: string, key: string, bytes: number): void;
}

const TOKEN_KEY = 'povdesk.token';

/** Reads the launch token from the URL fragment once, then drops it from the address bar. */
export function takeToken(loc: Location, storage: Storage, history: History): string | null {
  const m = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(loc.hash);
  if (m) {
    storage.setItem(TOKEN_KEY, m[1]!);
    history.replaceState(null, '', loc.pathname + loc.search);
    return m[1]!;
  }
  return storage.getItem(TOKEN_KEY);
}

export class ConnectionError extends Error {
  readonly code = 'unavailable';
}

/** Browser mode: the contract over the host's WebSocket, with the same three verbs as the preload. */
export function wsTransport(url: string, token: string): Transport {
  let ws: WebSocket | null = null;
  let ready: Promise<WebSocket> | null = null;
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, Set<Listener>>();

  const connect = (): Promise<WebSocket> => {
    if (ready) return ready;
    ready = new Promise((resolve, reject) => {
      const sock = new WebSocket(url, [WS_PROTOCOL, WS_TOKEN_PREFIX + token]);
      sock.onopen = () => {
        ws = sock;
        for (const k of listeners.keys()) {
          const [stream, key] = k.split('\u0000');
          sock.send(JSON.stringify({ t: 'sub', stream, key }));
        }
        resolve(sock);
      };
      sock.onerror = () => reject(new ConnectionError('cannot reach the POV Desk host; is `povdesk serve` still running?'));
      sock.onclose = () => {
        ws = null;
        ready = null;
        for (const p of pending.values()) p.reject(new ConnectionError('the connection to the POV Desk host closed'));
        pending.clear();
      };
      sock.binaryType = 'arraybuffer';
      sock.onmessage = (ev) => {
        const msg = (ev.data instanceof ArrayBuffer ? { t: 'event', ...decodeBinaryEvent(ev.data) } : JSON.parse(String(ev.data))) as ServerMessage;
        if (msg.t === 'event') {
          for (const k of [`${msg.stream}\u0000${msg.key}`, `${msg.stream}\u0000*`]) {
            const set = listeners.get(k);
            if (set) for (const fn of set) fn(msg.data, msg.bytes);
          }
          return;
        }
        const p = pending.get(msg.id);
        if (!p) return;
        pending.delete(msg.id);
        if (msg.t === 'result') p.resolve(msg.result);
        else p.reject(toError(msg.error));
      };
    });
    return ready;
  };

  const send = (m: unknown) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
    else void connect().then((s) => s.send(JSON.stringify(m)), () => undefined);
  };

  return {
    transport: 'ws',
    async call(method, args) {
      const sock = await connect();
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        sock.send(JSON.stringify({ t: 'call', id, method, args }));
      });
    },
    subscribe(stream, key, fn) {
      const k = `${stream}\u0000${key}`;
      let set = listeners.get(k);
      if (!set) {
        listeners.set(k, (set = new Set()));
        send({ t: 'sub', stream, key });
      }
      set.add(fn);
      return () => {
        set!.delete(fn);
        if (set!.size === 0) {
          listeners.delete(k);
          send({ t: 'unsub', stream, key });
        }
      };
    },
    ack(stream, key, bytes) {
      send({ t: 'ack', stream, key, bytes });
    },
  };
}

function toError(e: WireError): Error {
  const err = fromWireError(e);
  return Object.assign(new Error(err.message), { code: err.code, detail: err.detail });
}

export function wsUrlFor(loc: Location): string {
  return `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}${WS_PATH}`;
}
