/**
 * The cluster's identity provider for the tests: panva's `oidc-provider` (the OpenID-certified
 * implementation, not one we wrote) over https with a private CA, configured for the device flow
 * (RFC 8628) and refresh-token rotation, with one public client. What stands in for the person and
 * the cluster around it:
 * - approve/deny a user code, as the person would at the verification page: the provider's own
 *   DeviceCode and Grant models, written as its interaction would write them;
 * - a rate-limit policy that answers the first device poll `slow_down` (oidc-provider leaves
 *   slow_down to the deployment; Koa middleware, as its documentation suggests);
 * - `accepts(token)`: what vm-manager's OAuth guard checks (the id_token's signature with the
 *   provider's key, issuer, audience, expiry, and issued after the guard's last revocation);
 * - `foreignKeys`: the JWKS endpoint publishes another key under the same kid, so every id_token
 *   it signs is "signed by another key" from the client's point of view.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, verify, type JsonWebKey } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import { makeTls } from './support';

export interface IssuerOptions {
  clientId: string;
  /** lifetime of id/access tokens, seconds */
  tokenSeconds?: number;
  /** the interval the device authorization asks for, seconds */
  interval?: number;
  /** answer the first device poll with slow_down */
  slowDownOnce?: boolean;
}

const KID = 'povdesk-test-1';
const rsaJwk = (): { priv: JsonWebKey; pub: JsonWebKey } => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    priv: { ...privateKey.export({ format: 'jwk' }), kid: KID, use: 'sig', alg: 'RS256' },
    pub: { ...publicKey.export({ format: 'jwk' }), kid: KID, use: 'sig', alg: 'RS256' },
  };
};

export class TestIssuer {
  url = '';
  /** PEM of the private CA that signed the issuer's certificate (the app's CA bundle setting) */
  ca = '';
  caFile = '';
  /** token endpoint calls, in order: "device:<error|tokens>" or "refresh:<error|tokens>" */
  readonly calls: string[] = [];
  /** when each of `calls` was answered (ms since the epoch) */
  readonly callTimes: number[] = [];
  /** when set, /jwks publishes a different key with the same kid */
  foreignKeys = false;
  private server: Server | null = null;
  private provider!: Provider;
  private readonly key = rsaJwk();
  private readonly other = rsaJwk();
  private slowDown: boolean;
  /** the guard refuses id_tokens issued (iat, seconds) at or before this */
  private cutoff = 0;
  private readonly refreshTokens = new Set<string>();

  constructor(private readonly o: IssuerOptions) {
    this.slowDown = o.slowDownOnce ?? false;
  }

  async start(): Promise<this> {
    const tls = makeTls();
    this.ca = tls.ca;
    this.caFile = tls.caFile;
    this.server = createServer({ key: tls.key, cert: tls.cert });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `https://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    const seconds = this.o.tokenSeconds ?? 3600;
    this.provider = new Provider(this.url, {
      clients: [
        {
          client_id: this.o.clientId,
          token_endpoint_auth_method: 'none',
          grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
          response_types: [],
          redirect_uris: [],
        },
      ],
      jwks: { keys: [this.key.priv as never] },
      cookies: { keys: [randomBytes(16).toString('hex')] },
      features: { deviceFlow: { enabled: true }, devInteractions: { enabled: false }, revocation: { enabled: true } },
      rotateRefreshToken: true,
      issueRefreshToken: async (_ctx, client, code) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
      ttl: { AccessToken: seconds, IdToken: seconds, RefreshToken: 86_400, DeviceCode: 300, Grant: 86_400 },
      findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, email: sub }) }),
    });
    this.provider.use(async (ctx: KoaContextWithOIDC, next) => {
      if (ctx.path === '/jwks' && this.foreignKeys) {
        ctx.body = { keys: [this.other.pub] };
        return;
      }
      await next();
      const route = ctx.oidc?.route;
      const body = ctx.body as Record<string, unknown> | undefined;
      if (route === 'device_authorization' && body && ctx.status === 200) body.interval = this.o.interval ?? 1;
      if (route !== 'token' || !body) return;
      const grant = ctx.oidc.params?.grant_type === 'refresh_token' ? 'refresh' : 'device';
      if (grant === 'device' && body.error === 'authorization_pending' && this.slowDown) {
        this.slowDown = false;
        ctx.body = { error: 'slow_down', error_description: 'you are polling too quickly and should back off at a reasonable rate' };
      }
      const answer = ctx.body as Record<string, unknown>;
      this.calls.push(`${grant}:${typeof answer.error === 'string' ? answer.error : 'tokens'}`);
      this.callTimes.push(Date.now());
      if (typeof answer.refresh_token === 'string') this.refreshTokens.add(answer.refresh_token);
    });
    this.server.on('request', this.provider.callback());
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections?.();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** What vm-manager's OAuth guard checks: an id_token signed by this issuer's key, for this client, unexpired, not revoked. */
  accepts(token: string): boolean {
    const [h, p, s] = token.split('.');
    if (!h || !p || !s) return false;
    const key = createPublicKey({ key: this.key.pub, format: 'jwk' });
    if (!verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))) return false;
    const c = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { iss: string; aud: string; exp: number; iat: number };
    return c.iss === this.url && c.aud === this.o.clientId && c.exp * 1000 > Date.now() && c.iat > this.cutoff;
  }

  /** The code the person typed, found as the verification page finds it (normalized: the mask's dash dropped, upper case). */
  private async pending(userCode: string) {
    const code = await this.provider.DeviceCode.findByUserCode(userCode.toUpperCase().replace(/[^A-Z0-9]/g, ''));
    if (!code) throw new Error(`no pending login with code ${userCode}`);
    return code;
  }

  /** The person approves the code at the verification page: the grant and the code as the provider's interaction writes them. */
  async approve(userCode: string, accountId = 'se@example.com'): Promise<void> {
    const code = await this.pending(userCode);
    const grant = new this.provider.Grant({ accountId, clientId: this.o.clientId });
    grant.addOIDCScope((code.params?.scope as string) ?? 'openid');
    const grantId = await grant.save();
    Object.assign(code, { accountId, grantId, scope: code.params?.scope, authTime: Math.floor(Date.now() / 1000) });
    await code.save();
  }

  async deny(userCode: string): Promise<void> {
    const code = await this.pending(userCode);
    Object.assign(code, { error: 'access_denied', errorDescription: 'the person said no' });
    await code.save();
  }

  /**
   * The cluster's guard stops accepting every token issued so far (as after a session revocation):
   * the next call gets 401. Returns at the next second, so a token issued from then on is newer
   * (iat counts seconds, and an id_token refreshed in the same second is the same token).
   */
  async expireAccessTokens(): Promise<void> {
    const now = Date.now();
    this.cutoff = Math.floor(now / 1000);
    await new Promise((r) => setTimeout(r, 1000 - (now % 1000) + 5));
  }

  /** Every refresh token the provider issued is destroyed in its store: only a new login helps. */
  async revokeRefreshTokens(): Promise<void> {
    for (const value of this.refreshTokens) await (await this.provider.RefreshToken.find(value))?.destroy();
    this.refreshTokens.clear();
  }
}
