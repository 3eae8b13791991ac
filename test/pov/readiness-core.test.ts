import { afterEach, describe, expect, it } from 'vitest';
import { DAY, createPov, shareWorld, type ShareTestWorld } from '../share/helpers';

/**
 * pov.readiness and the pov.list badge through the handlers as the dispatcher binds them: real
 * SQLite with every migration, the Skytap emulator, results parsed by the contract.
 */
let w: ShareTestWorld | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('pov.readiness through the core', () => {
  it('a fresh POV is not ready for the listed reasons; a share link flips its item; the list carries the badge', async () => {
    w = await shareWorld();
    const id = await createPov(w, new Date(Date.now() + 3 * DAY));
    const r = await w.call('pov.readiness', { id });
    const state = Object.fromEntries(r.items.map((i) => [i.key, i.state]));
    expect(state).toEqual({
      environment: 'ok',
      controlNode: 'not_ready',
      gateway: 'not_configured',
      share: 'not_ready',
      autoDelete: 'ok',
      jobs: 'ok',
    });
    expect(r.overall).toBe('not_ready');
    expect(r.items.find((i) => i.key === 'share')!.action).toEqual({ label: 'Create a share link', method: 'share.create' });

    await w.call('share.create', { povId: id });
    const after = await w.call('pov.readiness', { id });
    expect(after.items.find((i) => i.key === 'share')!.state).toBe('ok');

    const { povs } = await w.call('pov.list', {});
    const shares = await w.call('share.list', { povId: id });
    expect(povs.find((p) => p.id === id)!.readiness).toEqual({
      overall: 'not_ready',
      summary: after.summary,
      shareExpiresAt: shares.shares[0]!.expiresAt,
    });
    await expect(w.call('pov.readiness', { id: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(w.call('pov.readiness', { id, extra: 1 } as never)).rejects.toThrow();
  });
});
