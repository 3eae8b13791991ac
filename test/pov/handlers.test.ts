import { afterEach, describe, expect, it } from 'vitest';
import { povMethods } from '../../shared/contract/pov';
import { NO_TOKEN_MESSAGE } from '../../main/services/skytap/saved';
import type { SecretStore } from '../../main/services/secrets/store';
import { memorySecrets } from '../support/core';
import { coreWorld, type CoreWorld } from './helpers';
import { SEEDS } from '../skytap-emulator/seed';
import { reconcileMethods } from '../../shared/contract/reconcile';

/**
 * The pov and skytap methods through the real core's Dispatcher: arguments parsed by the contract
 * schemas, results checked against them. Real SQLite, real settings service, the emulator over HTTP.
 */
let w: CoreWorld;
afterEach(async () => {
  await w?.close();
});

describe('pov and skytap handlers', () => {
  it('without a saved token, Skytap calls refuse with unauthorized and the remedy', async () => {
    w = await coreWorld({ noSkytap: true });
    await expect(w.call('skytap.testConnection', {})).rejects.toMatchObject({ code: 'unauthorized', message: NO_TOKEN_MESSAGE });
    await expect(w.call('skytap.listTemplates', {})).rejects.toMatchObject({ code: 'unauthorized' });
    // pov.create starts a job (the row exists at once); the job fails with the same remedy
    const { jobId } = await w.call('pov.create', { templateId: '500', name: 'No token' });
    const job = await w.jobs.wait(jobId);
    expect(job.state).toBe('failed');
    expect(job.error).toMatchObject({ code: 'unauthorized', message: NO_TOKEN_MESSAGE });
  });

  it('drives create → suspend → start → destroy through the contract with saved settings', async () => {
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' } });
    const t = await w.call('skytap.testConnection', {});
    expect(t).toMatchObject({ outcome: 'ok', good: true, templateCount: 3, scope: 'account' });
    const { templates } = await w.call('skytap.listTemplates', {});
    expect(templates.map((x) => x.name)).toContain('Windows AD lab');
    const tpl = templates.find((x) => x.name === 'Windows AD lab')!;
    expect(tpl.vmCount).toBe(2);

    const created = await w.call('pov.create', { templateId: tpl.id, name: 'Contract POV' });
    const job = await w.jobs.wait(created.jobId);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const { povs } = await w.call('pov.list', {});
    expect(povs).toHaveLength(1);
    const pov = povs[0]!;
    expect(pov).toMatchObject({ name: 'Contract POV', templateName: 'Windows AD lab', state: 'active', runstate: 'running' });
    const detail = await w.call('pov.get', { id: pov.id });
    expect(detail.vms.map((v) => v.os)).toEqual(['windows', 'windows']);
    await expect(w.call('pov.start', { id: pov.id })).rejects.toMatchObject({ code: 'conflict' });
    const sus = await w.call('pov.suspend', { id: pov.id });
    expect((await w.jobs.wait(sus.jobId)).state).toBe('succeeded');
    expect((await w.call('pov.get', { id: pov.id })).pov).toMatchObject({
      runstate: 'suspended',
      actions: { start: true, suspend: false },
    });
    const st = await w.call('pov.start', { id: pov.id });
    expect((await w.jobs.wait(st.jobId)).state).toBe('succeeded');
    const rec = await w.call('reconcile.runNow', {});
    expect((await w.jobs.wait(rec.jobId)).routine).toBe(true);
    const des = await w.call('pov.destroy', { id: pov.id });
    expect((await w.jobs.wait(des.jobId)).state).toBe('succeeded');
    expect((await w.call('pov.list', {})).povs).toHaveLength(0);
    expect((await w.call('pov.list', { includeDestroyed: true })).povs[0]!.state).toBe('destroyed');
  }, 60_000);

  it("pov.list shows each row's readiness without asking the keychain again on every list", async () => {
    const inner = memorySecrets();
    const asked: string[] = [];
    const secrets: SecretStore = {
      get: (a) => (asked.push(a), inner.get(a)),
      set: (a, v) => inner.set(a, v),
      delete: (a) => inner.delete(a),
      status: () => inner.status(),
    };
    w = await coreWorld({ env: { POVDESK_SKYTAP_POLL_MS: '20' }, secrets });
    const tpl = [...w.emu.state.templates.values()].find((x) => x.name === 'Windows AD lab')!;
    for (const name of ['One', 'Two'])
      expect((await w.jobs.wait((await w.call('pov.create', { templateId: tpl.id, name })).jobId)).state).toBe('succeeded');
    const first = await w.call('pov.list', {});
    expect(first.povs).toHaveLength(2);
    expect(first.povs.every((p) => p.readiness?.overall === 'not_ready')).toBe(true);
    asked.length = 0;
    const again = await w.call('pov.list', {});
    expect(again.povs.map((p) => p.readiness)).toEqual(first.povs.map((p) => p.readiness));
    expect(asked).toEqual([]);
    // A secret saved through the app is seen at once (the flag follows the write, not a stale read).
    const povId = first.povs[0]!.id;
    await w.call('pam.saveTenants', { povId, pra: { site: 'https://pra.example.com', clientId: 'c', clientSecret: 's3cret-value' } });
    expect((await w.call('pam.status', { povId })).tenants.pra).toMatchObject({ secretSet: true });
    expect(asked).toEqual([]);
  }, 60_000);

  it('settings.saveSkytap refuses a token with white space and changes nothing', async () => {
    w = await coreWorld();
    await expect(w.call('settings.saveSkytap', { username: 'someone-else', apiToken: 'demo token' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('white space'),
    });
    expect((await w.call('settings.get', {})).skytap).toMatchObject({ username: 'demo', tokenSet: true });
    expect(await w.base.secrets.get('skytap-api-token')).toBe('demo-token');
  });

  it('refuses a poll interval outside 10..60000 ms', async () => {
    const { pollMsFrom } = await import('../../main/core/config');
    expect(pollMsFrom({})).toBeUndefined();
    expect(pollMsFrom({ POVDESK_SKYTAP_POLL_MS: '250' })).toBe(250);
    expect(() => pollMsFrom({ POVDESK_SKYTAP_POLL_MS: '5' })).toThrow(/10 to 60000/);
    expect(() => pollMsFrom({ POVDESK_SKYTAP_POLL_MS: 'fast' })).toThrow(/10 to 60000/);
  });

  it('argument objects are strict and validated', () => {
    expect(povMethods['pov.create'].args.safeParse({ templateId: '1', name: 'x', extra: 1 }).success).toBe(false);
    expect(povMethods['pov.create'].args.safeParse({ templateId: '1; rm', name: 'x' }).success).toBe(false);
    expect(povMethods['pov.create'].args.safeParse({ templateId: '1', name: '   ' }).success).toBe(false);
    expect(povMethods['pov.setVmOs'].args.safeParse({ povId: 'a', vmId: 'b', os: 'macos' }).success).toBe(false);
    expect(povMethods['pov.setVmOs'].args.safeParse({ povId: 'a', vmId: 'b', os: null }).success).toBe(true);
    expect(reconcileMethods['reconcile.runNow'].args.safeParse({ now: true }).success).toBe(false);
  });

  it('Test connection reports no_templates as red and 401 with the token remedy', async () => {
    w = await coreWorld({ seed: SEEDS.empty });
    expect(await w.call('skytap.testConnection', {})).toMatchObject({ outcome: 'no_templates', good: false, templateCount: 0 });
    await w.base.settings.saveSkytap({ username: 'demo', apiToken: 'my-password', url: w.emu.url });
    const r = await w.call('skytap.testConnection', {});
    expect(r).toMatchObject({ outcome: 'unauthorized', good: false });
    expect(r.remedy).toMatch(/API security token/);
  });
});
