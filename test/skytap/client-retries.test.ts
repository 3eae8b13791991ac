import { describe, expect, it } from 'vitest';
import { BUDGETS, parseRetryAfter } from '../../main/services/skytap/client';
import { SEEDS } from '../skytap-emulator';
import { client, emulator, failure, recordingSleep } from './helpers';

/* The Skytap client's waits on 423/429 and on a busy environment (422), within its retry budget. */

describe('skytap client: 423/429/422-busy retries', () => {
  it('honours Retry-After in seconds, as an HTTP date, and falls back when absent or garbage', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    const date = new Date(Date.now() + 30_000).toUTCString();
    emu.faults.push(
      { match: 'GET /v2/templates', status: 423, retryAfter: 3 },
      { match: 'GET /v2/templates', status: 429, retryAfter: date },
      { match: 'GET /v2/templates', status: 423 },
      { match: 'GET /v2/templates', status: 429, retryAfter: 'soon-ish' },
    );
    const { c, waits, retries } = client(emu);
    expect(await c.listTemplates()).toHaveLength(3);
    expect(waits[0]).toBe(3000);
    expect(waits[1]).toBeGreaterThan(27_000);
    expect(waits[1]).toBeLessThanOrEqual(30_000);
    expect(waits.slice(2)).toEqual([7000, 7000]);
    expect(retries.map((r) => [r.status, r.attempt])).toEqual([
      [423, 1],
      [429, 2],
      [423, 3],
      [429, 4],
    ]);
  });

  it('parses Retry-After strictly', () => {
    expect(parseRetryAfter('0')).toBe(0);
    expect(parseRetryAfter('12')).toBe(12_000);
    expect(parseRetryAfter('-3')).toBeNull();
    expect(parseRetryAfter('1.5')).toBeNull();
    expect(parseRetryAfter('tomorrow')).toBeNull();
    expect(parseRetryAfter('2026')).toBe(2_026_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2015-10-21T07:27:50Z'))).toBe(10_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2016-01-01T00:00:00Z'))).toBe(0);
    expect(parseRetryAfter(undefined)).toBeNull();
  });

  it('when the budget is spent the error says "rate limited", not "failed"', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 429, retryAfter: 1, times: Infinity });
    const { c } = client(emu, { budget: { maxRetries: 2, fallbackWaitMs: 10, maxTotalWaitMs: 60_000 } });
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/rate limited/);
    expect(e.message).not.toMatch(/failed/i);
    expect(e.detail.retries).toBe(2);
    expect(emu.count('GET /v2/templates')).toBe(3);
  });

  it('stops before a Retry-After that would exceed the total wait budget', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 3600, times: Infinity });
    const { c, waits } = client(emu, { budget: BUDGETS.testConnection });
    const e = await failure(c.listTemplates());
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/wait 3600 s/);
    expect(waits).toEqual([]);
    expect(emu.count('GET /v2/templates')).toBe(1);
  });

  it('the test-connection budget allows exactly one retry', async () => {
    const emu = await emulator({ seed: SEEDS.demo });
    emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 1, times: Infinity });
    const { c } = client(emu, { budget: BUDGETS.testConnection });
    expect((await failure(c.listTemplatesPage(100, 0))).code).toBe('rate_limited');
    expect(emu.count('GET /v2/templates')).toBe(2);
  });

  it('retries a runstate change that meets a busy environment (422 busy) until Skytap accepts it', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 400, runstateBusyMs: 30 } });
    const rec = recordingSleep(1);
    const { c } = client(emu, { budget: { maxRetries: 50, fallbackWaitMs: 25, maxTotalWaitMs: 10_000 }, sleep: rec.sleep });
    const env = await c.createEnvironment({ templateId: '501', name: 'busy first' });
    const accepted = await c.setRunstate(env.id, 'running');
    expect(accepted.runstate).toBe('busy');
    expect(rec.waits.length).toBeGreaterThan(0);
    const puts = emu.requests.filter((r) => r.method === 'PUT');
    expect(puts.slice(0, -1).every((r) => r.status === 422)).toBe(true);
    expect(puts.at(-1)!.status).toBe(200);
  });

  it('an environment that stays busy ends as rate limited (busy) once the budget is spent', async () => {
    const emu = await emulator({ seed: SEEDS.demo, timing: { createBusyMs: 0 } });
    const { c } = client(emu, { budget: { maxRetries: 3, fallbackWaitMs: 10, maxTotalWaitMs: 60_000 } });
    emu.faults.push({ match: 'POST /configurations', kind: 'stayBusy' });
    const env = await c.createEnvironment({ templateId: '500', name: 'stuck' });
    const e = await failure(c.setRunstate(env.id, 'running'));
    expect(e.code).toBe('rate_limited');
    expect(e.message).toMatch(/resource stayed busy/);
    expect(emu.count('PUT /configurations/*')).toBe(4);
    expect((await c.getEnvironment(env.id))!.runstate).toBe('busy');
  });
});
