import { describe, expect, it } from 'vitest';
import { testConnection } from '../../main/services/skytap/test-connection';
import { SEEDS } from '../skytap-emulator';
import { emulator, recordingSleep } from './helpers';

describe('testConnection', () => {
  const creds = (url: string, extra: { token?: string; projectId?: string } = {}) => ({
    baseUrl: url,
    username: 'demo',
    token: extra.token ?? 'demo-token',
    ...(extra.projectId ? { projectId: extra.projectId } : {}),
  });

  it('ok: templates visible, count shown, one page read', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const r = await testConnection(creds(emu.url));
    expect(r).toMatchObject({ outcome: 'ok', ok: true, templateCount: 3, reason: null, remedy: null });
    expect(r.message).toMatch(/3 templates visible/);
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]).toMatchObject({ path: '/v2/templates', query: { count: '100', offset: '0', keep_idle: 'true' } });
  });

  it('ok counts the total, not the first page, and scopes to the project', async () => {
    const emu = await emulator({
      seed: (s) => {
        s.addProject('42');
        for (let i = 0; i < 130; i++) s.addTemplate({ name: `t${i}`, projects: ['42'] });
      },
    });
    const r = await testConnection(creds(emu.url, { projectId: '42' }));
    expect(r).toMatchObject({ outcome: 'ok', templateCount: 130, projectScoped: true });
    expect(emu.requests.map((q) => q.path)).toEqual(['/v2/projects/42/templates']);
  });

  it('unauthorized: says to use the API security token, not the password', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const r = await testConnection(creds(emu.url, { token: 'password123' }));
    expect(r).toMatchObject({ outcome: 'unauthorized', ok: false });
    expect(r.remedy).toMatch(/API security token from your Account page, not the account password/);
  });

  it('project_not_found: names the remedy', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const r = await testConnection(creds(emu.url, { projectId: '31337' }));
    expect(r).toMatchObject({ outcome: 'project_not_found', ok: false });
    expect(r.message).toMatch(/31337/);
    expect(r.remedy).toMatch(/Check the Project ID/);
  });

  it('no_templates is red: a POV cannot be created from an empty catalogue', async () => {
    const emu = await emulator();
    const r = await testConnection(creds(emu.url));
    expect(r).toMatchObject({ outcome: 'no_templates', ok: false, templateCount: 0 });
    expect(r.remedy).toMatch(/cannot be created from an empty catalogue/);
  });

  it('failed (rate_limited) after exactly one retry', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 429, retryAfter: 1, times: Infinity });
    const rec = recordingSleep(0);
    const r = await testConnection(creds(emu.url), { sleep: rec.sleep });
    expect(r).toMatchObject({ outcome: 'failed', ok: false, reason: 'rate_limited' });
    expect(r.message).toMatch(/rate limiting/);
    expect(rec.waits).toEqual([1000]);
    expect(emu.count('GET /v2/templates')).toBe(2);
  });

  it('one retry also gets past a single 423', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 423 });
    const r = await testConnection(creds(emu.url), { sleep: recordingSleep(0).sleep });
    expect(r.outcome).toBe('ok');
  });

  it('failed (server) on a persistent 500, with one retry', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 500, times: Infinity });
    const r = await testConnection(creds(emu.url), { sleep: recordingSleep(0).sleep });
    expect(r).toMatchObject({ outcome: 'failed', reason: 'server' });
    expect(emu.count('GET /v2/templates')).toBe(2);
  });

  it('a malformed Project ID is project_not_found and a malformed URL a network failure, with nothing sent', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const r = await testConnection(creds(emu.url, { projectId: 'my project' }));
    expect(r).toMatchObject({ outcome: 'project_not_found', ok: false });
    const r2 = await testConnection(creds('not a url'));
    expect(r2).toMatchObject({ outcome: 'failed', reason: 'network' });
    expect(r2.remedy).toMatch(/Skytap URL/);
    expect(emu.requests).toHaveLength(0);
  });

  it('failed (network) when nothing listens', async () => {
    const r = await testConnection(creds('http://127.0.0.1:9'), { sleep: recordingSleep(0).sleep });
    expect(r).toMatchObject({ outcome: 'failed', reason: 'network' });
    expect(r.remedy).toMatch(/Skytap URL/);
  });
});
