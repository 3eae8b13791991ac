import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkRequest, checkResponse } from '../pam-doubles/openapi-check';
import { pamWorld, type PamWorld } from './world';

/**
 * Every request the app makes to PRA (and Entitle) while wiring and unwiring a POV, checked
 * against the OFFICIAL specs: the operation exists, every query parameter is declared and valid,
 * every body field is declared, not read-only, and of the declared type (PRA answers 401 to an
 * unknown field). The doubles' answers are checked against the declared responses too. The specs
 * are not vendored: POVDESK_PAM_SPECS names the folder (.ci/run sets it to ../shared/research/pam).
 */
const dir = process.env.POVDESK_PAM_SPECS;
const missing = !dir
  ? 'POVDESK_PAM_SPECS is not set (it names the folder holding pra-configuration-api.openapi.yaml and entitle-api-v3.openapi.json, ' +
    'e.g. ../shared/research/pam)'
  : !existsSync(join(dir, 'pra-configuration-api.openapi.yaml'))
    ? `POVDESK_PAM_SPECS=${dir} holds no pra-configuration-api.openapi.yaml`
    : null;

if (missing && process.env.CI !== 'true') {
  describe('pam conformance against the official specs', () => {
    it.skip(`skipped: ${missing}`, () => {});
  });
} else {
  describe('pam conformance against the official specs', () => {
    it('has the specs (under CI=true a missing spec folder is a failure)', () => {
      expect(missing).toBeNull();
    });
    if (missing) return;
    const pra = parse(readFileSync(join(dir!, 'pra-configuration-api.openapi.yaml'), 'utf8'));
    const entitle = JSON.parse(readFileSync(join(dir!, 'entitle-api-v3.openapi.json'), 'utf8'));
    const API = '/api/config/v1';
    let p: PamWorld | undefined;
    afterAll(async () => p?.close());

    it('the checker refuses what PRA refuses (a string id, an unknown field, a read-only field, an undeclared filter)', () => {
      const bad = checkRequest(
        pra,
        {
          method: 'POST',
          path: '/jump-item/shell-jump',
          query: {},
          body: { name: 'x', jumpoint_id: '1', hostname: 'h', protocol: 'ssh', jump_group_id: 1, colour: 'red', id: 4 },
        },
        { strict: true },
      );
      expect(bad.join('\n')).toMatch(/jumpoint_id: expected an integer/);
      expect(bad.join('\n')).toMatch(/colour: not in the schema/);
      expect(bad.join('\n')).toMatch(/\.id: read-only/);
      expect(checkRequest(pra, { method: 'GET', path: '/jumpoint', query: { tag: 'x' }, body: undefined }, { strict: true })).toEqual([
        'GET /jumpoint: query parameter tag is not declared',
      ]);
      expect(
        checkRequest(pra, { method: 'GET', path: '/jump-group', query: { per_page: '500' }, body: undefined }, { strict: true })[0],
      ).toMatch(/above 100/);
    });

    it('every PRA and Entitle request of a wire, a re-wire and an unwire matches the spec; the doubles answer as declared', async () => {
      p = await pamWorld();
      for (const m of ['pam.wire', 'pam.wire', 'pam.unwire'] as const) {
        const job = await p.w.jobs.wait((await p.w.call(m, { povId: p.povId })).jobId);
        expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
      }
      const praCalls = p.pra.requests.filter((r) => r.path.startsWith(API));
      const tokens = p.pra.requests.filter((r) => r.path === '/oauth2/token');
      expect(praCalls.length).toBeGreaterThanOrEqual(20);
      const seen = new Set(praCalls.map((r) => `${r.method} ${r.path.slice(API.length).replace(/\/\d+/g, '/{id}')}`));
      for (const op of [
        'POST /jumpoint',
        'POST /jump-group',
        'POST /jump-item/shell-jump',
        'POST /jump-item/remote-rdp',
        'GET /jumpoint/{id}',
        'GET /jumpoint/{id}/node',
        'DELETE /jumpoint/{id}',
        'DELETE /jump-group/{id}',
      ])
        expect(seen).toContain(op);

      const errors: string[] = [];
      for (const r of praCalls) {
        const path = r.path.slice(API.length);
        errors.push(...checkRequest(pra, { ...r, path }, { strict: true }));
        // The node list: the spec shows one JumpointNode, the text says "the nodes" (docs/pam.md).
        if (r.status < 300 && !path.endsWith('/node')) errors.push(...checkResponse(pra, { ...r, path }));
      }
      for (const t of tokens) {
        if (
          t.method !== 'POST' ||
          !String(t.headers.authorization).startsWith('Basic ') ||
          new URLSearchParams(String(t.body)).get('grant_type') !== 'client_credentials'
        )
          errors.push(`token request ${t.method} ${JSON.stringify(t.body)}`);
      }
      const entitleCalls = p.en.requests;
      expect(entitleCalls.length).toBeGreaterThan(3);
      for (const r of entitleCalls) {
        errors.push(...checkRequest(entitle, r, { strict: true }));
        if (r.status < 300) errors.push(...checkResponse(entitle, r));
      }
      expect(errors).toEqual([]);
      // A token per job, never one per request (30 live tokens per API account).
      expect(tokens.length).toBeLessThanOrEqual(3);
    }, 120_000);
  });
}
