import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorCheck, DoctorReport } from '../../shared/contract/doctor';
import { formatReport } from '../../main/cli/doctor';
import { declaredOperations } from '../../main/services/doctor/platform';
import { pamWorld, SECRETS, type PamWorld } from '../pam/world';

/**
 * `povdesk doctor` (doctor.run / doctor.bundle) through the real core against the Skytap emulator,
 * the control-plane double and the PRA, Password Safe and Entitle doubles: every named assumption
 * answered; nothing written on any of them; each switch that breaks an assumption is reported as
 * contradicted with what differed; the support bundle holds no secret.
 */
let p: PamWorld;
beforeAll(async () => {
  p = await pamWorld();
  // a wired POV: a Jumpoint with its node, a Jump Group, Password Safe and Entitle objects to read
  const job = await p.w.jobs.wait((await p.w.call('pam.wire', { povId: p.povId })).jobId);
  if (job.state !== 'succeeded') throw new Error(`wire ${job.state}: ${JSON.stringify(job.error)}`);
}, 120_000);
afterAll(() => p?.close());

const byId = (r: DoctorReport) => new Map<string, DoctorCheck>(r.checks.map((c) => [c.id, c]));

/** Every request each party saw from `from` on, as "METHOD path". */
function requestsSince(from: ReturnType<typeof marks>) {
  return {
    skytap: p.w.emu.requests.slice(from.skytap).map((r) => `${r.method} ${r.path}`),
    pra: p.pra.requests.slice(from.pra).map((r) => `${r.method} ${r.path}`),
    ps: p.ps.requests.slice(from.ps).map((r) => `${r.method} ${r.path}`),
    en: p.en.requests.slice(from.en).map((r) => `${r.method} ${r.path}`),
    cp: p.cp.requests.slice(from.cp).map((r) => `${r.method} ${r.path}`),
  };
}
const marks = () => ({
  skytap: p.w.emu.requests.length,
  pra: p.pra.requests.length,
  ps: p.ps.requests.length,
  en: p.en.requests.length,
  cp: p.cp.requests.length,
});

describe('povdesk doctor against the emulator and the doubles', () => {
  it('answers every named assumption, confirmed where the doubles behave as documented, and writes nothing anywhere', async () => {
    const before = marks();
    const report = await p.w.call('doctor.run', {});
    const c = byId(report);
    for (const id of [
      'skytap.account',
      'skytap.paging',
      'skytap.project-404',
      'skytap.rate-limit-headers',
      'share.env-listing',
      'share.schedules',
      'pam.pra-token',
      'pam.pra-reads',
      'pam.pra-node',
      'pam.ps-session',
      'pam.ps-platforms',
      'pam.entitle-envelope',
      'pam.entitle-pra',
      'control-plane.spire',
    ]) {
      expect(c.get(id), `${id}: ${JSON.stringify(c.get(id))}`).toMatchObject({ result: 'confirmed' });
    }
    // nothing to look at, said so (no project, the local vm-manager)
    expect(c.get('skytap.project-shapes')).toMatchObject({ result: 'unknown', seen: expect.stringContaining('no Project ID') });
    expect(c.get('share.portal-shape')).toMatchObject({ result: 'unknown', seen: 'no sharing portal to look at' });
    expect(c.get('vm.remote-document')).toMatchObject({ result: 'unknown', seen: expect.stringContaining("this laptop's vm-manager") });
    expect(report.counts.contradicted).toBe(0);
    for (const check of report.checks) expect(check.doc).toMatch(/^docs\/[a-z-]+\.md, /);

    // read-only: GETs, and the sign-ins (PRA's token, Password Safe's SignAppIn/Signout) alone
    const seen = requestsSince(before);
    const writes = Object.entries(seen).flatMap(([who, list]) => list.filter((r) => !r.startsWith('GET ')).map((r) => `${who} ${r}`));
    expect(writes.sort()).toEqual([
      'pra POST /oauth2/token',
      'ps POST /BeyondTrust/api/public/v3/Auth/SignAppIn',
      'ps POST /BeyondTrust/api/public/v3/Auth/Signout',
    ]);
    expect(seen.skytap.length).toBeGreaterThanOrEqual(5);
    expect(seen.cp).toEqual(['GET /v1/spire']);
  }, 60_000);

  it('each assumption broken is contradicted, saying what differed', async () => {
    p.w.emu.breaks.paging = true;
    p.w.emu.breaks.scheduleShape = true;
    p.pra.renamed = { code_name: 'codeName' };
    try {
      const c = byId(await p.w.call('doctor.run', {}));
      expect(c.get('skytap.paging')).toMatchObject({
        result: 'contradicted',
        seen: expect.stringMatching(/asked for count=1, got \d+ items .*no Content-Range/),
      });
      expect(c.get('share.schedules')).toMatchObject({
        result: 'contradicted',
        seen: expect.stringMatching(/no configuration_id \(or configuration_url\).*environment_id/),
      });
      expect(c.get('pam.pra-reads')).toMatchObject({
        result: 'contradicted',
        seen: expect.stringMatching(/no code_name \(it has .*codeName/),
      });
      // the rest still holds
      expect(c.get('skytap.account')?.result).toBe('confirmed');
      expect(c.get('pam.pra-token')?.result).toBe('confirmed');
      expect(formatReport(await p.w.call('doctor.run', {}))).toMatch(/contradicted +skytap\.paging .*\n.*asked for count=1/);
    } finally {
      p.w.emu.breaks.paging = false;
      p.w.emu.breaks.scheduleShape = false;
      p.pra.renamed = {};
    }
  }, 60_000);

  it('the support bundle: one file under the data directory, with the report, versions and log lines, and no secret', async () => {
    const b = await p.w.call('doctor.bundle', {});
    expect(b.path.startsWith(p.w.home)).toBe(true);
    expect(statSync(b.path).mode & 0o077).toBe(0);
    const text = readFileSync(b.path, 'utf8');
    expect(Buffer.byteLength(text)).toBe(b.bytes);
    expect(text).toMatch(/== doctor: \d+ confirmed/);
    expect(text).toContain('"id": "skytap.paging"');
    expect(text).toMatch(/=== versions\nPOV Desk /);
    expect(text).toMatch(/=== log .*\.log/);
    const bytes = readFileSync(b.path);
    for (const secret of ['demo-token', ...Object.values(SECRETS).filter((s) => s.length > 0), p.en.token, p.cp.token]) {
      for (const form of [secret, Buffer.from(secret).toString('base64')])
        expect(bytes.includes(Buffer.from(form)), `the bundle holds a secret (${secret.slice(0, 6)}…)`).toBe(false);
    }
  }, 60_000);
});

describe('the served document compared with the one the client speaks', () => {
  it("reads operations from the daemon's JSON and from YAML in giantswarm's layout", () => {
    expect(declaredOperations(JSON.stringify({ paths: { '/host': { get: { operationId: 'getHost' } } } }))).toEqual(
      new Map([['getHost', 'GET /host']]),
    );
    const yaml = 'paths:\n  /vms/{id}:\n    get:\n      operationId: getVM\n    delete:\n      operationId: deleteVM\n';
    expect(declaredOperations(yaml)).toEqual(
      new Map([
        ['getVM', 'GET /vms/{id}'],
        ['deleteVM', 'DELETE /vms/{id}'],
      ]),
    );
  });
});
