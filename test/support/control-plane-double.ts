import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ENROLMENT_CODE_TTL_MS, type EnrolmentState, type SpireInfo } from '../../main/services/control-node/control-plane';

/**
 * A test double of the agent control plane: the protocol of docs/control-plane.md on loopback,
 * with in-memory agents. Tests drive enrolment with enrol()/expire() and read `requests`.
 */
interface Agent {
  agentId: string;
  povId: string;
  code: string;
  expiresAt: number;
  state: EnrolmentState['state'];
  attestation: EnrolmentState['attestation'];
  enrolledAt: string | null;
  joinToken: string | null;
}

export class ControlPlaneDouble {
  readonly token = randomBytes(16).toString('hex');
  readonly agents = new Map<string, Agent>();
  readonly requests: { method: string; path: string }[] = [];
  spireInfo: SpireInfo | null = null;
  /** Containers the agents were asked to run beside themselves (key agentId/name). */
  readonly containers = new Map<string, { agentId: string; name: string; image: string; env: Record<string, string>; args: string[] }>();
  /** Resource Broker installs the agents were asked to run (key agentId/host). */
  readonly brokerInstalls = new Map<string, { agentId: string; host: string; installKey: string }>();
  /** What the agent's container does once started (tests: the Jumpoint checks in with PRA). */
  onContainer: ((agentId: string, name: string, env: Record<string, string>) => void) | null = null;
  /** Each redemption the agent side asked for (POST /v1/agents/{id}/enrol), in order, with the answer's status. */
  readonly redemptions: { agentId: string; status: number; at: number }[] = [];
  url = '';
  private readonly server: Server;
  private seq = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err) => this.reply(res, 500, { error: { code: 'internal', message: String(err) } }));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    if (!a || typeof a === 'string') throw new Error('control-plane double has no address');
    this.url = `http://127.0.0.1:${a.port}`;
    return this;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  /** What a guest's agent does when it redeems its code (or presents its SVID). */
  enrol(agentId: string, attestation: 'spire' | 'ed25519'): void {
    const a = this.agents.get(agentId);
    if (!a) throw new Error(`no agent ${agentId}`);
    a.state = 'enrolled';
    a.attestation = attestation;
    a.enrolledAt = new Date(this.now()).toISOString();
  }

  /** POST /v1/agents/{agentId}/enrol {"code"}: the agent redeems its single-use code (docs/control-plane.md). */
  private async redeem(req: IncomingMessage, res: ServerResponse, agentId: string) {
    const answer = (status: number, body: unknown) => {
      this.redemptions.push({ agentId, status, at: this.now() });
      this.reply(res, status, body);
    };
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > 4096) return answer(400, { error: { code: 'invalid_request', message: 'body over 4096 bytes' } });
      chunks.push(c as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return answer(400, { error: { code: 'invalid_request', message: 'body is not JSON' } });
    }
    const code = (body as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !code || Object.keys(body as object).length !== 1) {
      return answer(400, { error: { code: 'invalid_request', message: 'the body is {"code": "<enrolment code>"}' } });
    }
    const agent = this.agents.get(agentId);
    if (!agent || agent.state === 'revoked') return answer(404, { error: { code: 'not_found', message: `no agent ${agentId}` } });
    const same = Buffer.from(code).length === Buffer.from(agent.code).length && timingSafeEqual(Buffer.from(code), Buffer.from(agent.code));
    if (!same) return answer(403, { error: { code: 'forbidden', message: 'wrong enrolment code' } });
    if (agent.state === 'enrolled')
      return answer(403, { error: { code: 'forbidden', message: 'this enrolment code was already redeemed (single use)' } });
    if (agent.state === 'expired' || this.now() > agent.expiresAt) {
      agent.state = 'expired';
      return answer(403, { error: { code: 'forbidden', message: 'the enrolment code expired' } });
    }
    this.enrol(agentId, 'ed25519');
    return answer(200, { state: 'enrolled' });
  }

  /** Containers and tasks (docs/control-plane.md): only for an enrolled agent; PUT/DELETE by name. */
  private task(res: ServerResponse, method: string, agentId: string, kind: string, name: string, body: Record<string, unknown>) {
    const agent = this.agents.get(agentId);
    if (!agent || agent.state === 'revoked') return this.reply(res, 404, { error: { code: 'not_found', message: `no agent ${agentId}` } });
    if (agent.state !== 'enrolled')
      return this.reply(res, 409, { error: { code: 'conflict', message: `agent ${agentId} is ${agent.state}, not enrolled` } });
    const key = `${agentId}/${name}`;
    if (kind === 'containers' && method === 'PUT') {
      const env = body.env as Record<string, string> | undefined;
      if (typeof body.image !== 'string' || !body.image || !env || typeof env !== 'object' || !Array.isArray(body.args)) {
        return this.reply(res, 400, { error: { code: 'invalid_request', message: 'image, env and args are required' } });
      }
      const existed = this.containers.has(key);
      this.containers.set(key, { agentId, name, image: body.image, env, args: body.args as string[] });
      if (!existed) this.onContainer?.(agentId, name, env);
      return this.reply(res, existed ? 200 : 201, { state: existed ? 'running' : 'started' });
    }
    if (kind === 'containers' && method === 'DELETE') {
      if (!this.containers.delete(key)) return this.reply(res, 404, { error: { code: 'not_found', message: `no container ${name}` } });
      return this.reply(res, 204);
    }
    if (kind === 'broker-install' && method === 'PUT') {
      if (typeof body.installKey !== 'string' || !body.installKey)
        return this.reply(res, 400, { error: { code: 'invalid_request', message: 'installKey is required' } });
      const existed = this.brokerInstalls.has(key);
      this.brokerInstalls.set(key, { agentId, host: name, installKey: body.installKey });
      return this.reply(res, existed ? 200 : 202, { state: existed ? 'installed' : 'accepted' });
    }
    return this.reply(res, 405, { error: { code: 'invalid_request', message: `${method} not allowed on ${kind}` } });
  }

  private reply(res: ServerResponse, status: number, body?: unknown) {
    res.statusCode = status;
    if (body === undefined) return res.end();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '').split('?')[0]!;
    const method = req.method ?? 'GET';
    this.requests.push({ method, path });
    const redeem = /^\/v1\/agents\/([^/]+)\/enrol$/.exec(path);
    // The agent's side: the enrolment code is the credential, so no bearer.
    if (redeem && method === 'POST') return this.redeem(req, res, decodeURIComponent(redeem[1]!));
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      return this.reply(res, 401, { error: { code: 'unauthorized', message: 'bad or missing bearer token' } });
    }
    let body: Record<string, unknown> = {};
    if (method === 'POST' || method === 'PUT') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        return this.reply(res, 400, { error: { code: 'invalid_request', message: 'body is not JSON' } });
      }
    }
    if (method === 'POST' && path === '/v1/enrolment-codes') {
      if (typeof body.povId !== 'string' || !body.povId) {
        return this.reply(res, 400, { error: { code: 'invalid_request', message: 'povId is required' } });
      }
      const agentId = `agt_${(++this.seq).toString(36)}${randomBytes(3).toString('hex')}`;
      const agent: Agent = {
        agentId,
        povId: body.povId,
        code: `enr_${randomBytes(18)
          .toString('base64url')
          .replace(/^[-_]+/, 'x')}`,
        expiresAt: this.now() + ENROLMENT_CODE_TTL_MS,
        state: 'pending',
        attestation: null,
        enrolledAt: null,
        joinToken: null,
      };
      this.agents.set(agentId, agent);
      return this.reply(res, 201, { agentId, code: agent.code, expiresAt: new Date(agent.expiresAt).toISOString() });
    }
    if (method === 'GET' && path === '/v1/spire') {
      return this.reply(res, 200, this.spireInfo ? { enabled: true, ...this.spireInfo } : { enabled: false });
    }
    const task = /^\/v1\/agents\/([^/]+)\/(containers|broker-install)\/([^/]+)$/.exec(path);
    if (task) return this.task(res, method, decodeURIComponent(task[1]!), task[2]!, decodeURIComponent(task[3]!), body);
    const m = /^\/v1\/agents\/([^/]+)(\/join-token)?$/.exec(path);
    const agent = m ? this.agents.get(decodeURIComponent(m[1]!)) : undefined;
    if (!m || !agent || agent.state === 'revoked') {
      return this.reply(res, 404, { error: { code: 'not_found', message: `no such agent or path ${path}` } });
    }
    if (method === 'POST' && m[2]) {
      if (!this.spireInfo) return this.reply(res, 409, { error: { code: 'conflict', message: 'this control plane runs no SPIRE server' } });
      agent.joinToken = randomBytes(16).toString('hex');
      return this.reply(res, 201, {
        token: agent.joinToken,
        spiffeId: `spiffe://${this.spireInfo.trustDomain}/node/${agent.agentId}`,
        expiresAt: new Date(agent.expiresAt).toISOString(),
      });
    }
    if (method === 'GET' && !m[2]) {
      if (agent.state === 'pending' && this.now() > agent.expiresAt) agent.state = 'expired';
      return this.reply(res, 200, {
        agentId: agent.agentId,
        state: agent.state,
        attestation: agent.attestation,
        enrolledAt: agent.enrolledAt,
      });
    }
    if (method === 'DELETE' && !m[2]) {
      agent.state = 'revoked';
      return this.reply(res, 204);
    }
    return this.reply(res, 405, { error: { code: 'invalid_request', message: `${method} not allowed on ${path}` } });
  }
}
