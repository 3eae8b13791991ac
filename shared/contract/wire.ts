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
