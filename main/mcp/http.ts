import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Base } from '../core/base';
import type { Dispatcher } from '../core/dispatch';
import { sameSecret } from '../core/owner-endpoint';
import { foreignRequest } from '../lib/loopback-guard';
import { followLocalJob } from './core-backend';
import type { McpBackend } from './server';

/**
 * The MCP SDK (its schemas, ajv) is loaded by the first request, not at start-up: nothing before
 * the host's first answer needs it (docs/decisions/foundation.md, "Cold start").
 */
let sdk: Promise<[typeof import('../vm-manager/mcp'), typeof import('./server')]> | null = null;
const loadSdk = () => (sdk ??= Promise.all([import('../vm-manager/mcp'), import('./server')]));

export interface OwnerMcp {
  url: string;
  close(): Promise<void>;
}

/**
 * The owner's MCP endpoint: `povdesk mcp`'s server over streamable HTTP on loopback
 * (http://127.0.0.1:<port>/mcp, stateless, JSON answers), with its own bearer token (mcp.token in
 * the data directory, 0600): not the socket's owner.token, so a leak of one opens nothing else.
 */
export async function startOwnerMcp(core: { base: Base; dispatcher: Dispatcher }, token: string): Promise<OwnerMcp> {
  const backend: McpBackend = {
    call: (method, args) => core.dispatcher.call(method, args, { transport: 'cli' }),
    follow: (jobId, onJob, stop) => followLocalJob(core, jobId, onJob, stop),
  };
  const refuse = (res: ServerResponse, status: number, code: string, message: string) =>
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { code, message } }));
  let own = '';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const foreign = foreignRequest(req, own);
    if (foreign) {
      core.base.log.warn('MCP request refused', { why: foreign });
      return refuse(res, 403, 'forbidden', foreign);
    }
    const [{ answerStateless, isMcpPath }, { createPovdeskMcpServer }] = await loadSdk();
    if (!isMcpPath(req.url)) return refuse(res, 404, 'not_found', 'the MCP endpoint is /mcp');
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!m?.[1] || !sameSecret(m[1], token)) {
      return refuse(
        res,
        401,
        'unauthorized',
        'missing or wrong bearer token: send "Authorization: Bearer <the token in mcp.token of the data directory>"',
      );
    }
    answerStateless(createPovdeskMcpServer(backend), req, res, (e) => {
      core.base.log.error('MCP request failed', { error: (e as Error)?.message });
      if (!res.headersSent) refuse(res, 500, 'internal', 'the MCP request failed; see the log');
    });
  };
  const http = createServer((req, res) =>
    handle(req, res).catch((e: Error) => {
      core.base.log.error('MCP request failed', { error: e.message });
      if (!res.headersSent) refuse(res, 500, 'internal', 'the MCP request failed; see the log');
    }),
  );
  await new Promise<void>((resolve, reject) => http.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  own = `127.0.0.1:${(http.address() as AddressInfo).port}`;
  const url = `http://${own}/mcp`;
  core.base.log.info('owner MCP endpoint listening', { url });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
