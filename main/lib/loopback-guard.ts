/**
 * Who may talk to an MCP endpoint on loopback HTTP (the owner's and the vm-manager's): DNS
 * rebinding lets a web page on a name that later resolves to 127.0.0.1 send requests there, and
 * the MCP specification asks servers to validate Origin. `own` is the exact `address:port` the
 * server listens on: the Host header must be it, and an Origin, when a browser sends one, must be
 * `http://<own>` (no browser page of another origin, another port's included). Clients that are
 * not browsers send no Origin.
 */
import type { IncomingMessage } from 'node:http';

/** Why the request must be refused (403), or null when it may go on. */
export function foreignRequest(req: IncomingMessage, own: string): string | null {
  if (req.headers.host !== own)
    return (
      `Host "${String(req.headers.host ?? '').slice(0, 100)}" is not ${own}: call this endpoint by that address (a page on another ` +
      `name is refused: DNS rebinding)`
    );
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${own}`)
    return `Origin "${String(origin).slice(0, 100)}" is not http://${own}: a web page of another origin may not call this endpoint`;
  return null;
}
