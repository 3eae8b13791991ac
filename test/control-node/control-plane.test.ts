import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpControlPlane } from '../../main/services/control-node/control-plane';
import { ControlPlaneDouble } from '../support/control-plane-double';

describe('HTTP control plane against the loopback double', () => {
  let cp: ControlPlaneDouble;
  beforeAll(async () => {
    cp = await new ControlPlaneDouble().start();
  });
  afterAll(() => cp.stop());

  it('mints a 15-minute code, reads pending then enrolled, revokes idempotently', async () => {
    const client = new HttpControlPlane(cp.url, cp.token);
    const t0 = Date.now();
    const code = await client.mintEnrolmentCode('pov-1');
    expect(Date.parse(code.expiresAt) - t0).toBeGreaterThan(14 * 60_000);
    expect(Date.parse(code.expiresAt) - t0).toBeLessThanOrEqual(15 * 60_000 + 1000);
    expect(await client.enrolmentState(code.agentId)).toMatchObject({ state: 'pending', attestation: null });
    cp.enrol(code.agentId, 'ed25519');
    expect(await client.enrolmentState(code.agentId)).toMatchObject({ state: 'enrolled', attestation: 'ed25519' });
    expect(await client.revoke(code.agentId)).toBe('revoked');
    expect(await client.revoke(code.agentId)).toBe('already_gone');
  });

  it('mints a join token for spiffe://<td>/node/<agent> when SPIRE runs, and says when it does not', async () => {
    const client = new HttpControlPlane(cp.url, cp.token);
    cp.spireInfo = null;
    expect(await client.spire()).toBeNull();
    const code = await client.mintEnrolmentCode('pov-2');
    await expect(client.mintJoinToken(code.agentId)).rejects.toMatchObject({ code: 'conflict' });
    cp.spireInfo = { trustDomain: 'povdesk.test', serverAddress: '127.0.0.1:8081', trustBundle: 'PEM' };
    expect(await client.spire()).toEqual(cp.spireInfo);
    const jt = await client.mintJoinToken(code.agentId);
    expect(jt.spiffeId).toBe(`spiffe://povdesk.test/node/${code.agentId}`);
    cp.spireInfo = null;
  });

  it('a wrong token is unauthorized with the remedy; a dead URL is unavailable naming it', async () => {
    await expect(new HttpControlPlane(cp.url, 'wrong').mintEnrolmentCode('p')).rejects.toMatchObject({
      code: 'unauthorized',
      message: expect.stringContaining('Settings → Control node'),
    });
    const dead = new HttpControlPlane('http://127.0.0.1:9', 't', { timeoutMs: 2000 });
    await expect(dead.enrolmentState('a')).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining('http://127.0.0.1:9'),
    });
    expect(() => new HttpControlPlane('ftp://x', 't')).toThrow(/not an http/);
  });

  it('refuses answers that are not the protocol (wrong shape, a code with shell characters, a too-long code life)', async () => {
    let body: unknown = {};
    const srv = createServer((_q, s) => {
      s.statusCode = 201;
      s.setHeader('content-type', 'application/json');
      s.end(JSON.stringify(body));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    const client = new HttpControlPlane(url, 't');
    try {
      body = { hello: 'world' };
      await expect(client.mintEnrolmentCode('p')).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringContaining('cannot read'),
      });
      body = { agentId: 'a1', code: "x'; id #", expiresAt: new Date(Date.now() + 60_000).toISOString() };
      await expect(client.mintEnrolmentCode('p')).rejects.toMatchObject({ code: 'unavailable' });
      body = { agentId: 'a1', code: 'abc', expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
      await expect(client.mintEnrolmentCode('p')).rejects.toThrow(/at most 15 minutes/);
      body = { agentId: 'a1', code: 'abc', expiresAt: new Date(Date.now() + 600_000).toISOString() };
      await expect(client.mintEnrolmentCode('p')).resolves.toMatchObject({ code: 'abc' });
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it(
    'the agent side: POST /v1/agents/{id}/enrol {code} without a bearer enrols it (ed25519); a wrong, used or expired code is 403 ' +
      'and changes nothing',
    async () => {
      let clock = Date.now();
      const local = await new ControlPlaneDouble(() => clock).start();
      try {
        const client = new HttpControlPlane(local.url, local.token);
        const redeem = async (agentId: string, body: unknown) => {
          const r = await fetch(`${local.url}/v1/agents/${agentId}/enrol`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: typeof body === 'string' ? body : JSON.stringify(body),
          });
          return { status: r.status, body: (await r.json()) as unknown };
        };
        const a = await client.mintEnrolmentCode('pov-agent');
        for (const bad of ['not json', {}, { code: 5 }, { code: a.code, extra: 1 }])
          expect((await redeem(a.agentId, bad)).status).toBe(400);
        expect(await redeem(a.agentId, { code: `${a.code}x` })).toMatchObject({
          status: 403,
          body: { error: { code: 'forbidden', message: 'wrong enrolment code' } },
        });
        expect((await redeem('agt_nobody', { code: a.code })).status).toBe(404);
        expect(await client.enrolmentState(a.agentId)).toMatchObject({ state: 'pending', attestation: null });
        expect(await redeem(a.agentId, { code: a.code })).toEqual({ status: 200, body: { state: 'enrolled' } });
        expect(await client.enrolmentState(a.agentId)).toMatchObject({ state: 'enrolled', attestation: 'ed25519' });
        expect((await redeem(a.agentId, { code: a.code })).body).toMatchObject({ error: { message: expect.stringMatching(/single use/) } });

        const b = await client.mintEnrolmentCode('pov-agent');
        clock += 15 * 60_000 + 1;
        expect(await redeem(b.agentId, { code: b.code })).toMatchObject({
          status: 403,
          body: { error: { message: 'the enrolment code expired' } },
        });
        expect(await client.enrolmentState(b.agentId)).toMatchObject({ state: 'expired', attestation: null });
        expect(local.redemptions.map((r) => r.status)).toEqual([400, 400, 400, 400, 403, 404, 200, 403, 403]);
      } finally {
        await local.stop();
      }
    },
  );
});
