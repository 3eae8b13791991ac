import { describe, expect, it } from 'vitest';
import { SkytapClient, USER_DATA_MAX } from '../../main/services/skytap/client';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, failure, recordingSleep } from './helpers';

/* The Skytap client on environments, their VMs and user data, against the emulator. */

describe('skytap client: environments, VMs, user data', () => {
  it('creates without starting, powers on, reads VMs with interfaces and hardware', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 20, runstateBusyMs: 20 } });
    const { c } = client(emu, { sleep: recordingSleep(1).sleep, budget: { maxRetries: 50, fallbackWaitMs: 20, maxTotalWaitMs: 5000 } });
    const env = await c.createEnvironment({ templateId: '500', name: 'POV acme' });
    expect(env.name).toBe('POV acme');
    await waitFor(async () => (await c.getEnvironment(env.id))!.runstate === 'stopped');
    await c.setRunstate(env.id, 'running');
    await waitFor(async () => (await c.getEnvironment(env.id))!.runstate === 'running');
    const vms = await c.listVms(env.id);
    expect(vms.map((v) => v.name)).toEqual(['control-node', 'win-jump', 'rhel-target', 'appliance']);
    expect(vms[0]!.runstate).toBe('running');
    expect(vms[0]!.interfaces[0]).toMatchObject({ network_type: 'automatic' });
    expect(vms[0]!.interfaces[0]!.ip).toMatch(/^10\.0\./);
    expect(vms[1]!.hardware.guestOS).toBe('windows2019srv-64');
  });

  it('getEnvironment answers null on 404; delete is accepted then completes when GET answers 404', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, deleteMs: 400 } });
    const { c } = client(emu);
    expect(await c.getEnvironment('424242')).toBeNull();
    const env = await c.createEnvironment({ templateId: '501', name: 'doomed' });
    expect(await c.deleteEnvironment(env.id)).toBe('deleted');
    expect((await c.getEnvironment(env.id))!.runstate).toBe('busy');
    await waitFor(async () => (await c.getEnvironment(env.id)) === null);
    expect(await c.deleteEnvironment(env.id)).toBe('already_gone');
  });

  it('user data round-trips; over 16384 characters is refused before sending; Skytap’s 422 is a validation error', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu);
    const env = await c.createEnvironment({ templateId: '500', name: 'ud' });
    const [vm] = await c.listVms(env.id);
    const payload = '#!/bin/sh\n# BEGIN-DASHBOARD-AGENT-BOOTSTRAP\necho hi\n# END-DASHBOARD-AGENT-BOOTSTRAP\n';
    await c.setVmUserData(env.id, vm!.id, payload);
    expect(await c.getVmUserData(env.id, vm!.id)).toBe(payload);
    const before = emu.requests.length;
    const e = await failure(c.setVmUserData(env.id, vm!.id, 'x'.repeat(USER_DATA_MAX + 1)));
    expect(e.code).toBe('invalid_request');
    expect(emu.requests.length).toBe(before);
    emu.faults.push({ match: 'PUT /v2/configurations/*/vms/*/user_data', status: 422, message: 'Contents is too long' });
    const e2 = await failure(c.setVmUserData(env.id, vm!.id, 'short'));
    expect(e2.code).toBe('invalid_request');
    expect(e2.message).toMatch(/Contents is too long/);
  });

  it('an AbortSignal cancels a request and a retry wait', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const ac = new AbortController();
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 60 });
    const c = new SkytapClient({ baseUrl: emu.url, username: 'demo', token: 'demo-token' }, { signal: ac.signal });
    const p = c.listTemplates();
    setTimeout(() => ac.abort(), 100);
    const e = await failure(p);
    expect(e.code).toBe('cancelled');
    const ac2 = new AbortController();
    emu.faults.push({ match: 'GET /v2/templates', kind: 'hang' });
    const c2 = new SkytapClient({ baseUrl: emu.url, username: 'demo', token: 'demo-token' }, { signal: ac2.signal });
    const p2 = c2.listTemplates();
    setTimeout(() => ac2.abort(), 100);
    expect((await failure(p2)).code).toBe('cancelled');
  });

  it('surfaces Skytap’s rate_limited flag on an environment whose power operation was queued', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0, rateLimitedMs: 100_000 } });
    const { c } = client(emu);
    const env = await c.createEnvironment({ templateId: '501', name: 'queued' });
    emu.faults.push({ match: 'PUT /configurations/*', kind: 'rateLimited' });
    const after = await c.setRunstate(env.id, 'running');
    expect(after.rate_limited).toBe(true);
    expect((await c.listEnvironments())[0]!.rate_limited).toBe(true);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not reached');
}
