/**
 * Channel and protocol names shared by the Electron IPC adapter, the preload, the WebSocket host and
 * the renderer. The only channel strings in the code base are the ones below. (No zod here: the
 * renderer bundle imports this file.)
 */
export const IPC = {
  call: 'povdesk:call',
  subscribe: 'povdesk:subscribe',
  unsubscribe: 'povdesk:unsubscribe',
  ack: 'povdesk:ack',
  event: 'povdesk:event',
} as const;

/** The WebSocket subprotocols: the first names the protocol, the second carries the launch token. */
export const WS_PROTOCOL = 'povdesk.v1';
export const WS_TOKEN_PREFIX = 'token.';
export const WS_PATH = '/ws';

/**
 * `serve --open` hands the browser `<url>#code=<one-time code>` instead of the token (an opener's
 * command line is readable by every local user): the page POSTs the code in LAUNCH_CODE_HEADER to
 * LAUNCH_PATH once, within LAUNCH_CODE_TTL_MS, and gets `{token}` back.
 */
export const LAUNCH_PATH = '/launch';
export const LAUNCH_CODE_HEADER = 'x-povdesk-launch-code';
export const LAUNCH_CODE_TTL_MS = 120_000;

/**
 * Browser mode reads byte streams (terminal output) as a plain HTTP response body instead of
 * WebSocket messages: `GET /bytes?stream=…&key=…&conn=…` with the launch token in BYTES_TOKEN_HEADER
 * and `conn` the id the WebSocket's `hello` gave. In Chromium here a fetch body streams ~600 MB/s
 * against ~100 MB/s for WebSocket messages, and the WebSocket's cost per byte competed with xterm
 * for the two cores (bench ssh-ui: 19–22 MB/s over WebSocket frames, over 40 through the body).
 * Acknowledgements still go over the WebSocket, attributed to that connection's byte stream.
 */
export const BYTES_PATH = '/bytes';
export const BYTES_TOKEN_HEADER = 'x-povdesk-token';
/** Streams whose events are `{data: Uint8Array, bytes}` and can be read through BYTES_PATH. */
export const BYTE_STREAMS: readonly string[] = ['ssh.data'];

/**
 * A stream event whose data carries raw bytes (ssh.data) crosses the WebSocket as one binary
 * frame instead of base64 inside JSON: a 4-byte big-endian header length, the header as UTF-8
 * JSON — the event without the bytes, `binary` naming the field they belong in — then the bytes.
 * Base64 costs a third more on the wire plus an encode, a JSON parse and a decode per event.
 */
export interface BinaryEventHeader {
  t: 'event';
  stream: string;
  key: string;
  bytes: number;
  /** The event's data without the binary field. */
  data: Record<string, unknown>;
  binary: string;
}

/** The name of the one Uint8Array field of a plain object, or null. */
export function binaryField(data: unknown): string | null {
  if (!data || typeof data !== 'object' || ArrayBuffer.isView(data)) return null;
  const names = Object.keys(data).filter((k) => (data as Record<string, unknown>)[k] instanceof Uint8Array);
  return names.length === 1 ? names[0]! : null;
}

export function encodeBinaryEvent(stream: string, key: string, data: Record<string, unknown>, bytes: number, field: string): Uint8Array {
  const rest: Record<string, unknown> = { ...data };
  const payload = rest[field] as Uint8Array;
  delete rest[field];
  const header: BinaryEventHeader = { t: 'event', stream, key, bytes, data: rest, binary: field };
  const head = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + head.length + payload.length);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  out.set(payload, 4 + head.length);
  return out;
}

/** Reverses encodeBinaryEvent; the bytes are a view into `buf`, not a copy. Throws on a malformed frame. */
export function decodeBinaryEvent(buf: ArrayBuffer): { stream: string; key: string; bytes: number; data: Record<string, unknown> } {
  if (buf.byteLength < 4) throw new Error('binary frame shorter than its header length');
  const len = new DataView(buf).getUint32(0);
  if (4 + len > buf.byteLength) throw new Error(`binary frame header says ${len} bytes but the frame has ${buf.byteLength - 4}`);
  const h = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, len))) as Partial<BinaryEventHeader>;
  if (
    h.t !== 'event' ||
    typeof h.stream !== 'string' ||
    typeof h.key !== 'string' ||
    typeof h.bytes !== 'number' ||
    typeof h.binary !== 'string' ||
    !h.data ||
    typeof h.data !== 'object'
  ) {
    throw new Error('binary frame header is not an event');
  }
  return { stream: h.stream, key: h.key, bytes: h.bytes, data: { ...h.data, [h.binary]: new Uint8Array(buf, 4 + len) } };
}
