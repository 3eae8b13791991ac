import { AppError, isStreamName, streams } from '../../shared/contract';
import { streamKey } from '../../shared/stream-listeners';
import type { StreamHub, Subscriber } from './streams';

/** The stream half of the client protocol (shared/contract/transport.ts `clientMessage`). */
export type StreamMessage = { t: 'sub' | 'unsub'; stream: string; key: string } | { t: 'ack'; stream: string; key: string; bytes: number };

export interface StreamSessionOptions {
  /** Streams this transport serves (default: every stream of the contract). */
  serves?: (stream: string) => boolean;
  /**
   * The subscriber an ack is for, when not this session's own (browser mode reads byte streams
   * through their own HTTP response, acknowledged over the WebSocket).
   */
  ackTarget?: (stream: string, key: string) => Subscriber | undefined;
}

/**
 * One client's subscriptions on the hub: an Electron renderer, a WebSocket connection or a CLI
 * socket. The transport hands it `sub`/`unsub`/`ack` messages and a way to deliver an event; the
 * session subscribes each (stream, key) once, acknowledges 'auto' streams as they are delivered,
 * and drops everything on close.
 */
export class StreamSession {
  readonly sub: Subscriber;
  private readonly unsubs = new Map<string, () => void>();

  constructor(
    private readonly hub: StreamHub,
    deliver: (stream: string, key: string, data: unknown, bytes: number) => void,
    private readonly opts: StreamSessionOptions = {},
  ) {
    const sub: Subscriber = {
      unacked: new Map(),
      send: (stream, key, data, bytes) => {
        deliver(stream, key, data, bytes);
        if (isStreamName(stream) && streams[stream].ack === 'auto') hub.ack(sub, stream, key, bytes);
      },
    };
    this.sub = sub;
  }

  /** Applies one message; a subscription to a stream this transport does not serve is refused. */
  handle(m: StreamMessage): AppError | null {
    if (!isStreamName(m.stream) || (this.opts.serves && !this.opts.serves(m.stream))) {
      return m.t === 'sub' ? new AppError('invalid_request', `unknown stream ${m.stream}`) : null;
    }
    const k = streamKey(m.stream, m.key);
    switch (m.t) {
      case 'sub':
        if (!this.unsubs.has(k)) this.unsubs.set(k, this.hub.subscribe(m.stream, m.key, this.sub));
        return null;
      case 'unsub':
        this.unsubs.get(k)?.();
        this.unsubs.delete(k);
        return null;
      case 'ack':
        this.hub.ack(this.opts.ackTarget?.(m.stream, m.key) ?? this.sub, m.stream, m.key, m.bytes);
        return null;
    }
  }

  close(): void {
    for (const u of this.unsubs.values()) u();
    this.unsubs.clear();
  }
}
