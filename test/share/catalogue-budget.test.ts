import { afterEach, describe, expect, it } from 'vitest';
import { coreWorld, type CoreWorld } from '../pov/helpers';

/**
 * The create dialog's catalogue (skytap.listTemplates) gets the provisioning (default) retry
 * budget: only Test connection asks for one retry (seeds, "The retry budget is per client").
 */
let w: CoreWorld;
afterEach(async () => {
  await w?.close();
});

describe('skytap.listTemplates retry budget', () => {
  it('two 423s with Retry-After: 1, then a page: the catalogue answers', async () => {
    w = await coreWorld();
    w.emu.faults.push({ match: 'GET /v2/templates', status: 423, retryAfter: 1, times: 2, message: 'The account is rate limited.' });
    const res = await w.call('skytap.listTemplates', {});
    expect(res.templates.length).toBe(3);
    expect(w.emu.requests.filter((r) => r.path === '/v2/templates').map((r) => r.status)).toEqual([423, 423, 200]);
  }, 20_000);
});
