import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { povMethods } from '../../shared/contract/pov';
import { reconcileMethods } from '../../shared/contract/reconcile';
import { skytapMethods } from '../../shared/contract/skytap';
import { povHandlers } from '../../main/core/handlers/pov';
import { skytapHandlers, NO_TOKEN_MESSAGE } from '../../main/core/handlers/skytap';
import { baseFor, world, type World } from './helpers';
import { SEEDS } from '../skytap-emulator/seed';

/**
 * The handlers as the dispatcher runs them: arguments parsed by this domain's contract schemas,
 * results checked against them. Real SQLite, real settings service, the emulator over HTTP.
 */
let w: World;
afterEach(async () => {
  await w?.close();
});

const all = { ...povMethods, ...skytapMethods, ...reconcileMethods };
type All = typeof all;
async function call<M extends keyof All>(
  h: Record<string, (a: never, c: never) => Promise<unknown>>,
  method: M,
  args: z.input<All[M]['args']>,
): Promise<z.output<All[M]['result']>> {
  const parsed = all[method].args.parse(args);
  const result = await h[method]!(parsed as never, { transport: 'test' } as never);
  return all[method].result.parse(result) as z.output<All[M]['result']>;
}

describe('pov and skytap handlers', () => {
  it('without a saved token, Skytap calls refuse with unauthorized and the remedy', async () => {
    w = await world();
    const base = baseFor(w);
    const h = { ...skytapHandlers(base), ...povHandlers(base) } as never;
    await expect(call(h, 'skytap.testConnection', {})).rejects.toMatchObject({ code: 'unauthorized', message: NO_TOKEN_MESSAGE });
    await expect(call(h, 'skytap.listTemplates', {})).rejects.toMatchObject({ code: 'unauthorized' });
    // pov.create starts a job (the row exists at once); the job fails with the same remedy
    const { jobId } = await call(h, 'pov.create', { templateId: '500', name: 'No token' });
    const job = await w.jobs.wait(jobId);
    expect(job.state).toBe('failed');
    expect(job.error).toMatchObject({ code: 'unauthorized', message: NO_TOKEN_MESSAGE });
  });

  it('drives create → suspend → start → destroy through the contract with saved settings', async () => {
    w = await world();
    const base = baseFor(w, { POVDESK_SKYTAP_POLL_MS: '20' });
    await base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: w.emu.url });
    const h = { ...skytapHandlers(base), ...povHandlers(base) } as never;
    const t = await call(h, 'skytap.testConnection', {});
    expect(t).toMatchObject({ outcome: 'ok', good: true, templateCount: 3, scope: 'account' });
    const { templates } = await call(h, 'skytap.listTemplates', {});
    expect(templates.map((x) => x.name)).toContain('Windows AD lab');
    const tpl = templates.find((x) => x.name === 'Windows AD lab')!;
    expect(tpl.vmCount).toBe(2);

    const created = await call(h, 'pov.create', { templateId: tpl.id, name: 'Contract POV' });
    const job = await w.jobs.wait(created.jobId);
    expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
    const { povs } = await call(h, 'pov.list', {});
    expect(povs).toHaveLength(1);
    const pov = povs[0]!;
    expect(pov).toMatchObject({ name: 'Contract POV', templateName: 'Windows AD lab', state: 'active', runstate: 'running' });
    const detail = await call(h, 'pov.get', { id: pov.id });
    expect(detail.vms.map((v) => v.os)).toEqual(['windows', 'windows']);
    await expect(call(h, 'pov.start', { id: pov.id })).rejects.toMatchObject({ code: 'conflict' });
    const sus = await call(h, 'pov.suspend', { id: pov.id });
    expect((await w.jobs.wait(sus.jobId)).state).toBe('succeeded');
    expect((await call(h, 'pov.get', { id: pov.id })).pov).toMatchObject({ runstate: 'suspended', actions: { start: true, suspend: false } });
    const st = await call(h, 'pov.start', { id: pov.id });
    expect((await w.jobs.wait(st.jobId)).state).toBe('succeeded');
    const rec = await call(h, 'reconcile.runNow', {});
    expect((await w.jobs.wait(rec.jobId)).routine).toBe(true);
    const des = await call(h, 'pov.destroy', { id: pov.id });
    expect((await w.jobs.wait(des.jobId)).state).toBe('succeeded');
    expect((await call(h, 'pov.list', {})).povs).toHaveLength(0);
    expect((await call(h, 'pov.list', { includeDestroyed: true })).povs[0]!.state).toBe('destroyed');
  }, 60_000);

  it('refuses a poll interval outside 10..60000 ms', async () => {
    const { pollMsFrom } = await import('../../main/core/handlers/pov');
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
    w = await world({ seed: SEEDS.empty });
    const base = baseFor(w);
    await base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: w.emu.url });
    const h = skytapHandlers(base) as never;
    expect(await call(h, 'skytap.testConnection', {})).toMatchObject({ outcome: 'no_templates', good: false, templateCount: 0 });
    await base.settings.saveSkytap({ username: 'demo', apiToken: 'my-password', url: w.emu.url });
    const r = await call(h, 'skytap.testConnection', {});
    expect(r).toMatchObject({ outcome: 'unauthorized', good: false });
    expect(r.remedy).toMatch(/API security token/);
  });
});
