import { describe, expect, it } from 'vitest';
import type { SkytapClient } from '../../main/services/skytap/client';
import type { Environment } from '../../main/services/skytap/schemas';
import { inferOs } from '../../main/services/skytap/schemas';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, recordingSleep } from './helpers';

/** Polls like the lifecycle does: GET (keep_idle) until the predicate holds. */
async function until(c: SkytapClient, id: string, ok: (e: Environment | null) => boolean): Promise<Environment | null> {
  for (let i = 0; i < 500; i++) {
    const e = await c.getEnvironment(id);
    if (ok(e)) return e;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`environment ${id} never reached the state`);
}

describe('a whole POV environment through the client, under Skytap weather', () => {
  it('create (423 first), wait, power on (busy 422s), VMs with OS, user data, suspend, delete → 404', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 400, runstateBusyMs: 30, deleteMs: 30 } });
    const { c, retries } = client(emu, {
      sleep: recordingSleep(0.01).sleep,
      budget: { maxRetries: 200, fallbackWaitMs: 1000, maxTotalWaitMs: 600_000 },
    });
    emu.faults.push(
      { match: 'POST /configurations', status: 423, retryAfter: 1 },
      { match: 'GET /v2/configurations/*', status: 502 },
      { match: 'GET /v2/configurations/*/vms', kind: 'truncated' },
    );

    const env = await c.createEnvironment({ templateId: '500', name: 'POV weather' });
    expect(emu.count('POST /configurations')).toBe(2);
    // Power on straight away: Skytap answers 422 busy until the create settles; the client retries.
    await c.setRunstate(env.id, 'running');
    expect(emu.requests.some((r) => r.method === 'PUT' && r.status === 422)).toBe(true);
    const running = await until(c, env.id, (e) => e?.runstate === 'running');
    expect(running!.vms).toHaveLength(4);

    const vms = await c.listVms(env.id);
    expect(vms.map((v) => [v.name, inferOs(v)])).toEqual([
      ['control-node', 'linux'],
      ['win-jump', 'windows'],
      ['rhel-target', 'linux'],
      ['appliance', 'unknown'],
    ]);
    await c.setVmUserData(env.id, vms[0]!.id, 'BEGIN-DASHBOARD-AGENT-BOOTSTRAP\nx\nEND-DASHBOARD-AGENT-BOOTSTRAP');
    expect(await c.getVmUserData(env.id, vms[0]!.id)).toMatch(/^BEGIN.*END-DASHBOARD-AGENT-BOOTSTRAP$/s);

    await c.setRunstate(env.id, 'suspended');
    await until(c, env.id, (e) => e?.runstate === 'suspended');
    expect(await c.deleteEnvironment(env.id)).toBe('deleted');
    await until(c, env.id, (e) => e === null);
    expect(await c.listEnvironments()).toEqual([]);

    expect(retries.map((r) => r.status)).toContain(423);
    expect(retries.map((r) => r.status)).toContain(502);
    expect(retries.map((r) => r.status)).toContain(0);
    expect(emu.requests.filter((r) => r.method === 'GET').every((r) => r.query.keep_idle === 'true')).toBe(true);
    expect(emu.faults.remaining()).toEqual([]);
  });
});
