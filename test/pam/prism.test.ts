import { afterAll, describe, expect, it } from 'vitest';
import { entitleDocument, front, praDocument, skipUnlessCi, specFolder, startPrism, type Prism } from '../support/prism';
import { pamWorld, type PamWorld } from './world';

/**
 * The PRA and Entitle clients checked by a tool we did not write, on the official specs
 * (../shared/research/pam; POVDESK_PAM_SPECS, as the conformance walk): Stoplight Prism as a
 * validating proxy in front of each double while a POV is wired, re-wired and unwired. Every
 * request the app sends and every answer the doubles give must validate. PRA's /oauth2/token is
 * described in the spec's text, not its paths, so it goes straight to the double. The PRA double
 * answers the Jumpoint's nodes as the spec's schema has them (one JumpointNode; docs/pam.md).
 */
const spec = specFolder('POVDESK_PAM_SPECS', 'pra-configuration-api.openapi.yaml', '../shared/research/pam');
const skip = skipUnlessCi(spec);

describe.skipIf(skip !== null)('PRA and Entitle clients through Prism on the official specs', () => {
  const closers: (() => Promise<void>)[] = [];
  let praPrism: Prism;
  let enPrism: Prism;
  let p: PamWorld | undefined;
  afterAll(async () => {
    await p?.close();
    for (const c of closers.reverse()) await c();
  });

  it('has the specs (under CI=true a missing folder is a failure)', () => {
    expect(spec.missing).toBeNull();
  });

  it('a wire, a re-wire and an unwire: Prism finds every request and answer valid', async () => {
    p = await pamWorld({
      front: async (pra, en) => {
        pra.nodeAnswer = 'spec'; // the client reads either; here the spec's own shape
        praPrism = await startPrism('proxy', praDocument(spec.dir), pra.url);
        enPrism = await startPrism('proxy', entitleDocument(spec.dir), en.url);
        const praFront = await front(praPrism.url, pra.url, (path) => path === '/oauth2/token');
        closers.push(
          () => praPrism.close(),
          () => enPrism.close(),
          () => praFront.close(),
        );
        return { pra: praFront.url, entitle: enPrism.url };
      },
    });
    for (const m of ['pam.wire', 'pam.wire', 'pam.unwire'] as const) {
      const job = await p.w.jobs.wait((await p.w.call(m, { povId: p.povId })).jobId);
      expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    }
    expect(p.pra.requests.filter((r) => r.path.startsWith('/api/config/v1')).length).toBeGreaterThanOrEqual(20);
    expect(p.en.requests.length).toBeGreaterThan(3);
    expect(await praPrism.violations()).toEqual([]);
    expect(await enPrism.violations()).toEqual([]);
    expect(praPrism.log()).toMatch(/Forwarding "post" request to .*\/api\/config\/v1\/jumpoint/);
    expect(enPrism.log()).toMatch(/Forwarding "get" request to .*\/public\/v1\//);
  }, 240_000);

  it('the check can fail: a PRA body field of the wrong type is refused, with where and why', async () => {
    const r = await fetch(`${praPrism.url}/api/config/v1/jump-group`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer x' },
      body: JSON.stringify({ name: 7 }),
    });
    expect(r.status).toBe(422);
    const problem = (await r.json()) as { validation: { location: string[]; message: string }[] };
    expect(problem.validation).toContainEqual(
      expect.objectContaining({ location: ['body', 'name'], message: expect.stringContaining('must be string') }),
    );
    expect((await praPrism.violations()).join('\n')).toMatch(/UNPROCESSABLE_ENTITY/);
  });
});
