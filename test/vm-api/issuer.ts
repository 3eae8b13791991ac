/**
 * A small OIDC provider for the tests, on loopback: the discovery document, the device
 * authorization endpoint, the token endpoint (device_code grant with authorization_pending and
 * slow_down, refresh_token grant with rotation) and a way for the test to approve or deny a code
 * the way a person would in the browser. Tokens are JWT-shaped (exp readable), unsigned: the
 * double of vm-manager asks this issuer whether a token is one it issued and still valid.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

interface Pending {
  deviceCode: string;
  userCode: string;
  state: 'pending' | 'approved' | 'denied';
  lastPoll: number;
}

export interface IssuerOptions {
  clientId: string;
  /** lifetime of id/access tokens, seconds */
  tokenSeconds?: number;
  /** interval the device authorization asks for, seconds */
  interval?: number;
  /** answer the first poll with slow_down */
  slowDownOnce?: boolean;
}

export class TestIssuer {
  url = '';
  private server: Server | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly valid = new Map<string, number>();
  private readonly refresh = new Set<string>();
  /** token endpoint calls, in order: "device:<answer>" or "refresh:<answer>" */
  readonly calls: string[] = [];
  private slowDown: boolean;

  constructor(private readonly o: IssuerOptions) {
    this.slowDown = o.slowDownOnce ?? false;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/dex`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections?.();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** What vm-manager's OAuth guard asks: a token this issuer made that has not expired or been revoked. */
  accepts(token: string): boolean {
    const exp = this.valid.get(token);
    return exp !== undefined && exp > Date.now();
  }

  approve(userCode: string): void {
    const p = [...this.pending.values()].find((x) => x.userCode === userCode);
    if (!p) throw new Error(`no pending login with code ${userCode}`);
    p.state = 'approved';
  }

  deny(userCode: string): void {
    const p = [...this.pending.values()].find((x) => x.userCode === userCode);
    if (p) p.state = 'denied';
  }

  /** The server side forgets every access token (as after a key rotation): the next call gets 401. */
  expireAccessTokens(): void {
    this.valid.clear();
  }

  /** Refresh tokens stop working: only a new login helps. */
  revokeRefreshTokens(): void {
    this.refresh.clear();
  }

  private issue(): Record<string, unknown> {
    const seconds = this.o.tokenSeconds ?? 3600;
    const exp = Math.floor(Date.now() / 1000) + seconds;
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const idToken = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: this.url, aud: this.o.clientId, sub: 'se@example.com', exp, jti: randomBytes(8).toString('hex') })}.sig`;
    const access = `at-${randomBytes(16).toString('hex')}`;
    const refresh = `rt-${randomBytes(16).toString('hex')}`;
    this.valid.set(idToken, exp * 1000);
    this.valid.set(access, exp * 1000);
    this.refresh.add(refresh);
    return { access_token: access, token_type: 'Bearer', expires_in: seconds, id_token: idToken, refresh_token: refresh };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const json = (status: number, body: unknown): void => void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/dex/.well-known/openid-configuration') {
      return json(200, { issuer: this.url, token_endpoint: `${this.url}/token`, device_authorization_endpoint: `${this.url}/device/code`, authorization_endpoint: `${this.url}/auth`, jwks_uri: `${this.url}/keys` });
    }
    const parts: Buffer[] = [];
    for await (const d of req) parts.push(d as Buffer);
    const form = new URLSearchParams(Buffer.concat(parts).toString('utf8'));
    if (req.method === 'POST' && path === '/dex/device/code') {
      if (form.get('client_id') !== this.o.clientId) return json(401, { error: 'invalid_client' });
      const p: Pending = { deviceCode: randomBytes(16).toString('hex'), userCode: randomBytes(3).toString('hex').toUpperCase(), state: 'pending', lastPoll: 0 };
      this.pending.set(p.deviceCode, p);
      return json(200, { device_code: p.deviceCode, user_code: p.userCode, verification_uri: `${this.url}/device`, verification_uri_complete: `${this.url}/device?user_code=${p.userCode}`, expires_in: 300, interval: this.o.interval ?? 1 });
    }
    if (req.method === 'POST' && path === '/dex/token') {
      const grant = form.get('grant_type');
      if (form.get('client_id') !== this.o.clientId) return json(401, { error: 'invalid_client' });
      if (grant === 'urn:ietf:params:oauth:grant-type:device_code') {
        const p = this.pending.get(form.get('device_code') ?? '');
        const answer = (status: number, body: Record<string, unknown>) => {
          this.calls.push(`device:${(body.error as string | undefined) ?? 'tokens'}`);
          json(status, body);
        };
        if (!p) return answer(400, { error: 'expired_token' });
        if (this.slowDown) {
          this.slowDown = false;
          return answer(400, { error: 'slow_down' });
        }
        if (p.state === 'denied') return answer(400, { error: 'access_denied' });
        if (p.state === 'pending') return answer(400, { error: 'authorization_pending' });
        this.pending.delete(p.deviceCode);
        return answer(200, this.issue());
      }
      if (grant === 'refresh_token') {
        const rt = form.get('refresh_token') ?? '';
        if (!this.refresh.has(rt)) {
          this.calls.push('refresh:invalid_grant');
          return json(400, { error: 'invalid_grant', error_description: 'refresh token is invalid or expired' });
        }
        this.refresh.delete(rt); // rotation
        this.calls.push('refresh:tokens');
        return json(200, this.issue());
      }
      return json(400, { error: 'unsupported_grant_type' });
    }
    json(404, { error: 'not_found' });
  }
}
