import { z } from 'zod';
import { wireErrorSchema } from './errors';

/**
 * The wire messages shared by the Electron IPC adapter and the WebSocket host. The only channel
 * names in the code base are the ones below.
 */
export const IPC = {
  call: 'povdesk:call',
  subscribe: 'povdesk:subscribe',
  unsubscribe: 'povdesk:unsubscribe',
  ack: 'povdesk:ack',
  event: 'povdesk:event',
} as const;

const key = z.string().min(1).max(200);

export const clientMessage = z.discriminatedUnion('t', [
  z.object({ t: z.literal('call'), id: z.number().int().nonnegative(), method: z.string().max(100), args: z.unknown() }).strict(),
  z.object({ t: z.literal('sub'), stream: z.string().max(100), key }).strict(),
  z.object({ t: z.literal('unsub'), stream: z.string().max(100), key }).strict(),
  z.object({ t: z.literal('ack'), stream: z.string().max(100), key, bytes: z.number().int().nonnegative() }).strict(),
]);
export type ClientMessage = z.infer<typeof clientMessage>;

export type ServerMessage =
  | { t: 'result'; id: number; result: unknown }
  | { t: 'error'; id: number; error: z.infer<typeof wireErrorSchema> }
  | { t: 'event'; stream: string; key: string; data: unknown; bytes: number };

/** The WebSocket subprotocols: the first names the protocol, the second carries the launch token. */
export const WS_PROTOCOL = 'povdesk.v1';
export const WS_TOKEN_PREFIX = 'token.';
export const WS_PATH = '/ws';
