import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import type { WireError } from './errors';
import {
  BYTE_STREAMS,
  BYTES_PATH,
  BYTES_TOKEN_HEADER,
  IPC,
  LAUNCH_CODE_HEADER,
  LAUNCH_PATH,
  WS_PATH,
  WS_PROTOCOL,
  WS_TOKEN_PREFIX,
} from './wire';

export { BYTE_STREAMS, BYTES_PATH, BYTES_TOKEN_HEADER, IPC, LAUNCH_CODE_HEADER, LAUNCH_PATH, WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX };

const key = lazySchema(() => z.string().min(1).max(200));

export const clientMessage = lazySchema(() =>
  z.discriminatedUnion('t', [
    z.strictObject({ t: z.literal('call'), id: z.number().int().nonnegative(), method: z.string().max(100), args: z.unknown() }),
    z.strictObject({ t: z.literal('sub'), stream: z.string().max(100), key }),
    z.strictObject({ t: z.literal('unsub'), stream: z.string().max(100), key }),
    z.strictObject({ t: z.literal('ack'), stream: z.string().max(100), key, bytes: z.number().int().nonnegative() }),
  ]),
);
export type ClientMessage = z.infer<typeof clientMessage>;

export type ServerMessage =
  /** First message on a connection: its id, which byte-stream requests name (see BYTES_PATH). */
  | { t: 'hello'; conn: string }
  | { t: 'result'; id: number; result: unknown }
  | { t: 'error'; id: number; error: WireError }
  | { t: 'event'; stream: string; key: string; data: unknown; bytes: number };
