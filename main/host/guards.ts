import type { IncomingMessage, ServerResponse } from 'node:http';
import { LAUNCH_CODE_HEADER, LAUNCH_CODE_TTL_MS } from '../../shared/contract/wire';
import type { Logger } from '../services/log/logger';

/**
 * Which requests come from the host's own page. DNS rebinding: a page on a name that later
 * resolves to 127.0.0.1 is same-origin with itself and sends that name as Host, so only the bound
 * address and port are answered; a page from any other origin is refused even if it learned the
 * token. The port is known once the server listens.
 */
export class OwnOrigin {
  port = 0;
  constructor(private readonly host: string) {}

  isOwnHost(req: IncomingMessage): boolean {
    const { host, port } = this;
    return req.headers.host === (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
  }

  /** A missing Origin is not allowed here; callers that accept one (no browser sends none on a fetch) check first. */
  allows(origin: string | undefined): boolean {
    const port = this.port;
    return origin !== undefined && [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`].includes(origin);
  }

  /** Fetch metadata, when the browser sends it, says the request is from this origin. */
  sameSite(req: IncomingMessage): boolean {
    const site = req.headers['sec-fetch-site'];
    return site === undefined || site === 'same-origin';
  }
}

/**
 * One-time launch codes (see LAUNCH_PATH): `serve --open` hands the browser a code instead of the
 * token; the page trades it for the token once, within LAUNCH_CODE_TTL_MS.
 */
export class LaunchCodes {
  private readonly codes = new Map<string, number>();
  constructor(
    private readonly token: string,
    private readonly origin: OwnOrigin,
    private readonly log: Logger,
  ) {}

  add(code: string): void {
    this.codes.set(code, Date.now() + LAUNCH_CODE_TTL_MS);
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    const answer = (status: number, body: string, type = 'text/plain; charset=utf-8') =>
      void res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' }).end(body);
    if (req.method !== 'POST') return answer(405, 'POST only');
    if (!this.origin.sameSite(req) || !this.origin.allows(req.headers.origin)) {
      this.log.warn('launch code refused', { why: 'foreign origin' });
      return answer(403, 'foreign origin');
    }
    const code = String(req.headers[LAUNCH_CODE_HEADER] ?? '');
    const expires = this.codes.get(code);
    this.codes.delete(code);
    if (expires === undefined || expires < Date.now()) {
      this.log.warn('launch code refused', { why: expires === undefined ? 'unknown or already used' : 'expired' });
      return answer(
        403,
        'unknown, expired or already used launch code: open the URL `povdesk serve` printed, or start it again with --open',
      );
    }
    answer(200, JSON.stringify({ token: this.token }), 'application/json');
  }
}
