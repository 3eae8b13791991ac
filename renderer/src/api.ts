import type { Args, MethodName, Result, StreamData, StreamName } from '../../shared/contract';
import { takeToken, wsTransport, wsUrlFor, type Transport } from './transport';

declare global {
  interface Window {
    povdesk?: Transport;
  }
}

/** Chosen once at start: Electron's preload bridge when present, else browser mode's WebSocket. */
function pickTransport(): Transport {
  if (typeof window !== 'undefined' && window.povdesk) return window.povdesk;
  const token = takeToken(window.location, window.sessionStorage, window.history);
  if (!token) {
    return {
      transport: 'ws',
      call: () =>
        Promise.reject(
          Object.assign(new Error('This page was opened without its launch token. Open the URL `povdesk serve` printed.'), {
            code: 'unauthorized',
          }),
        ),
      subscribe: () => () => undefined,
      ack: () => undefined,
    };
  }
  return wsTransport(wsUrlFor(window.location), token);
}

let transport: Transport | null = null;
const t = () => (transport ??= pickTransport());

export interface ApiError extends Error {
  code?: string;
  detail?: unknown;
}

export const api = {
  get transport() {
    return t().transport;
  },
  call<M extends MethodName>(method: M, args: Args<M>): Promise<Result<M>> {
    return t().call(method, args) as Promise<Result<M>>;
  },
  /** For 'manual' streams the consumer calls api.ack with the bytes it has rendered. */
  subscribe<S extends StreamName>(stream: S, key: string, onData: (data: StreamData<S>, bytes: number) => void): () => void {
    return t().subscribe(stream, key, onData as (d: unknown, b: number) => void);
  },
  ack(stream: StreamName, key: string, bytes: number): void {
    t().ack(stream, key, bytes);
  },
};

/** Test seam: renderer unit tests install a transport backed by a real core. */
export function setTransport(next: Transport | null): void {
  transport = next;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
