import { fromWireError, type WireError } from '../../shared/contract/errors';
import {
  BYTE_STREAMS,
  BYTES_PATH,
  BYTES_TOKEN_HEADER,
  decodeBinaryEvent,
  LAUNCH_CODE_HEADER,
  LAUNCH_PATH,
  WS_PATH,
  WS_PROTOCOL,
  WS_TOKEN_PREFIX,
} from '../../shared/contract/wire';
import type { ServerMessage } from '../../shared/contract/transport';
import { StreamListeners, streamKey, type StreamListener } from '../../shared/stream-listeners';

export type Listener = StreamListener;

/** What the renderer needs from a transport: window.povdesk (Electron) or the WebSocket client. */
export interface Transport {
  transport: 'ipc' | 'ws';
  call(method: string, args: unknown): Promise<unknown>;
  subscribe(stream: string, key: string, fn: Listener): () => void;
  ack(stream: string, key: string, bytes: number): void;
}

const TOKEN_KEY = 'povdesk.token';

/**
 * Reads the launch token from the URL fragment once, then drops it from the address bar. A
 * `#code=` fragment (what `serve --open` hands the browser) is exchanged for the token once.
 */
export function takeToken(loc: Location, storage: Storage, history: History): string | Promise<string> | null {
  const m = /(?:^#|&)(token|code)=([A-Za-z0-9_-]+)/.exec(loc.hash);
  if (!m) return storage.getItem(TOKEN_KEY);
  history.replaceState(null, '', loc.pathname + loc.search);
  if (m[1] === 'token') {
    storage.setItem(TOKEN_KEY, m[2]!);
    return m[2]!;
  }
  return exchangeLaunchCode(`${loc.protocol}//${loc.host}${LAUNCH_PATH}`, m[2]!).then((token) => {
    storage.setItem(TOKEN_KEY, token);
    return token;
  });
}

async function exchangeLaunchCode(url: string, code: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { [LAUNCH_CODE_HEADER]: code }, cache: 'no-store' });
  const body = (await res.json().catch(() => null)) as { token?: unknown } | null;
  if (!res.ok || typeof body?.token !== 'string') {
    throw Object.assign(
      new Error('This launch link was already used or has expired. Open the URL `povdesk serve` printed, or start it again.'),
      {
        code: 'unauthorized',
      },
    );
  }
  return body.token;
}

export class ConnectionError extends Error {
  readonly code = 'unavailable';
}

/**
 * Browser mode: the contract over the host's WebSocket, with the same three verbs as the preload.
 * Byte streams (terminal output) are read from an HTTP response body tied to the WebSocket
 * connection instead (see BYTES_PATH in shared/contract/wire.ts); their acks still go over the
 * WebSocket.
 */
export function wsTransport(url: string, launchToken: string | Promise<string>): Transport {
  let token = typeof launchToken === 'string' ? launchToken : '';
  const tokenReady = Promise.resolve(launchToken).then((t) => (token = t));
  tokenReady.catch(() => undefined); // a failed exchange surfaces through every call instead
  let ws: WebSocket | null = null;
  let conn: string | null = null;
  let ready: Promise<WebSocket> | null = null;
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const listeners = new StreamListeners();
  const byteReaders = new Map<string, AbortController>();
  const bytesUrl = new URL(url);
  bytesUrl.protocol = bytesUrl.protocol === 'wss:' ? 'https:' : 'http:';
  bytesUrl.pathname = BYTES_PATH;

  const connect = (): Promise<WebSocket> => {
    if (ready) return ready;
    ready = tokenReady.then(
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const sock = new WebSocket(url, [WS_PROTOCOL, WS_TOKEN_PREFIX + token]);
          sock.binaryType = 'arraybuffer';
          sock.onerror = () => reject(new ConnectionError('cannot reach the POV Desk host; is `povdesk serve` still running?'));
          sock.onclose = () => {
            ws = null;
            conn = null;
            ready = null;
            for (const p of pending.values()) p.reject(new ConnectionError('the connection to the POV Desk host closed'));
            pending.clear();
          };
          sock.onmessage = (ev) => {
            const msg = (
              ev.data instanceof ArrayBuffer ? { t: 'event', ...decodeBinaryEvent(ev.data) } : JSON.parse(String(ev.data))
            ) as ServerMessage;
            if (msg.t === 'hello') {
              // The host's first message: from here on the connection can be used.
              ws = sock;
              conn = msg.conn;
              for (const { stream, key } of listeners.pairs()) {
                if (!BYTE_STREAMS.includes(stream)) sock.send(JSON.stringify({ t: 'sub', stream, key }));
              }
              resolve(sock);
              return;
            }
            if (msg.t === 'event') {
              listeners.deliver(msg.stream, msg.key, msg.data, msg.bytes);
              return;
            }
            const p = pending.get(msg.id);
            if (!p) return;
            pending.delete(msg.id);
            if (msg.t === 'result') p.resolve(msg.result);
            else p.reject(toError(msg.error));
          };
        }),
    );
    return ready;
  };

  const send = (m: unknown) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
    else
      void connect().then(
        (s) => s.send(JSON.stringify(m)),
        () => undefined,
      );
  };

  let readBody: BodyReader | null = null;

  /** Reads a byte stream until unsubscribed; opens it again (on a new connection) if it ends by itself. */
  const readBytes = (stream: string, key: string) => {
    const k = streamKey(stream, key);
    const ctl = new AbortController();
    byteReaders.set(k, ctl);
    void (async () => {
      try {
        await connect();
        const u = new URL(bytesUrl);
        u.search = new URLSearchParams({ stream, key, conn: conn ?? '' }).toString();
        readBody ??= workerBodyReader(token) ?? mainThreadBodyReader(token);
        await readBody(u, ctl.signal, (value) => listeners.deliverExact(stream, key, { data: value, bytes: value.length }, value.length));
      } catch {
        // aborted by unsubscribe, host gone, or refused: decided below
      }
      if (ctl.signal.aborted || byteReaders.get(k) !== ctl) return;
      // Ended without being asked: the WebSocket dropped (its byte streams end with it) or the host
      // restarted. Try again shortly, on whatever connection is current by then.
      setTimeout(() => {
        if (!ctl.signal.aborted && byteReaders.get(k) === ctl && listeners.has(stream, key)) readBytes(stream, key);
      }, 500);
    })();
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
      if (!BYTE_STREAMS.includes(stream)) {
        return listeners.add(stream, key, fn, {
          first: () => send({ t: 'sub', stream, key }),
          last: () => send({ t: 'unsub', stream, key }),
        });
      }
      const k = streamKey(stream, key);
      return listeners.add(stream, key, fn, {
        first: () => readBytes(stream, key),
        last: () => {
          byteReaders.get(k)?.abort();
          byteReaders.delete(k);
        },
      });
    },
    ack(stream, key, bytes) {
      send({ t: 'ack', stream, key, bytes });
    },
  };
}

/** Reads one byte-stream body to its end (or until the signal aborts), handing over each chunk. */
type BodyReader = (url: URL, signal: AbortSignal, onChunk: (chunk: Uint8Array) => void) => Promise<void>;

function mainThreadBodyReader(token: string): BodyReader {
  return async (url, signal, onChunk) => {
    const res = await fetch(url, { headers: { [BYTES_TOKEN_HEADER]: token }, signal, cache: 'no-store' });
    if (!res.ok || !res.body) throw new Error(`byte stream refused (${res.status})`);
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk(value);
    }
  };
}

/**
 * The same in a worker (bytes-worker.ts), so the body is drained while the main thread is busy in
 * xterm's parser; null where the page cannot start one (then the main thread reads).
 */
function workerBodyReader(token: string): BodyReader | null {
  let worker: Worker;
  try {
    worker = new Worker(new URL('./bytes-worker.ts', import.meta.url), { type: 'module', name: 'povdesk-bytes' });
  } catch {
    return null;
  }
  const open = new Map<string, { onChunk: (chunk: Uint8Array) => void; end: (error?: string) => void }>();
  let seq = 0;
  // A worker that cannot load (a policy, a missing file) says so only by this event: every body
  // waiting on it ends (readBytes opens it again) and later ones are read on the main thread.
  let broken = false;
  const onMain = mainThreadBodyReader(token);
  worker.onerror = () => {
    broken = true;
    worker.terminate();
    for (const o of open.values()) o.end('the byte-stream worker failed');
    open.clear();
  };
  worker.onmessage = (ev: MessageEvent<{ t: 'data'; k: string; buf: ArrayBuffer } | { t: 'end'; k: string; error?: string }>) => {
    const m = ev.data;
    const o = open.get(m.k);
    if (!o) return; // a body already closed here: its last chunks are dropped with it
    if (m.t === 'data') o.onChunk(new Uint8Array(m.buf));
    else {
      open.delete(m.k);
      o.end(m.error);
    }
  };
  const viaWorker: BodyReader = (url, signal, onChunk) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return resolve();
      // One id per body, so a chunk still queued from a closed body never reaches its successor.
      const k = String(++seq);
      open.set(k, { onChunk, end: (error) => (error ? reject(new Error(error)) : resolve()) });
      signal.addEventListener(
        'abort',
        () => {
          if (open.delete(k)) worker.postMessage({ t: 'close', k });
          resolve();
        },
        { once: true },
      );
      worker.postMessage({ t: 'open', k, url: url.href, header: BYTES_TOKEN_HEADER, token });
    });
  return (url, signal, onChunk) => (broken ? onMain : viaWorker)(url, signal, onChunk);
}

function toError(e: WireError): Error {
  const err = fromWireError(e);
  return Object.assign(new Error(err.message), { code: err.code, detail: err.detail });
}

export function wsUrlFor(loc: Location): string {
  return `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}${WS_PATH}`;
}
