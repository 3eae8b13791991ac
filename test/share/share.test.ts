import { afterEach, describe, expect, it } from 'vitest';
import { PASSWORD_ALPHABET } from '../../main/services/share/password';
import { parseSkytapTime } from '../../main/services/skytap/share-api';
import { PORTALS_DISABLED_MESSAGE } from '../skytap-emulator/sharing';
import { followPovUpdates } from '../pov/helpers';
import { until } from '../vm-manager/support';
import { createPov, DAY, HOUR, postPortal, shareWorld, skytapRequest, type ShareTestWorld } from './helpers';

let w: ShareTestWorld;
afterEach(async () => {
  await w?.close();
});

function portalPosts(w: ShareTestWorld) {
  return w.emu.requests.filter((r) => r.method === 'POST' && /publish_sets/.test(r.path));
}

describe('share links against the emulator', () => {
  it('create always sends a generated password, an expiry not after auto-delete; list, show again, extend, rotate, revoke', async () => {
    w = await shareWorld();
    const deleteAt = new Date(w.clock.now().getTime() + 10 * DAY);
    const povId = await createPov(w, deleteAt);

    const { share, password } = await w.call('share.create', { povId });
    expect(password.replace(/-/g, '')).toMatch(new RegExp(`^[${PASSWORD_ALPHABET}]{20,}$`));
    const sent = portalPosts(w);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as Record<string, unknown>;
    expect(typeof body.password === 'string' && (body.password as string).length >= 20).toBe(true);
    expect(body.password).toBe(password);
    const expiry = parseSkytapTime(String(body.expiration_date))!;
    expect(expiry.getTime()).toBeLessThanOrEqual(deleteAt.getTime());
    // every VM of the environment by default, the whole environment shared
    expect((body.vms as unknown[]).length).toBe(4);
    expect(share).toMatchObject({ managed: true, passwordStored: true, goneAt: null });
    expect(share.url).toMatch(/\/vms\/[0-9a-f]+\/desktops$/);

    // Skytap never reads the password back; the keychain does
    const env = w.emu.requests.length;
    const got = await skytapRequest(w, 'GET', `/v2/configurations/${w.emu.state.environmentIds()[0]}/publish_sets/${share.shareId}`).then(
      (r) => r.json() as Promise<{ password: string }>,
    );
    expect(got.password).toMatch(/^\*+$/);
    expect(w.emu.requests.length).toBe(env + 1);
    expect((await w.call('share.password', { povId, shareId: share.shareId })).password).toBe(password);

    // a later expiry than auto-delete is refused with the reason, and nothing is sent
    const later = new Date(deleteAt.getTime() + HOUR).toISOString();
    await expect(w.call('share.create', { povId, expiresAt: later })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/after this POV's auto-delete time/),
    });
    await expect(w.call('share.extend', { povId, shareId: share.shareId, expiresAt: later })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(portalPosts(w)).toHaveLength(1);

    const newExpiry = new Date(w.clock.now().getTime() + 2 * DAY);
    const ext = await w.call('share.extend', { povId, shareId: share.shareId, expiresAt: newExpiry.toISOString() });
    expect(Math.abs(new Date(ext.share.expiresAt!).getTime() - newExpiry.getTime())).toBeLessThan(1000);

    const rot = await w.call('share.rotatePassword', { povId, shareId: share.shareId });
    expect(rot.password).not.toBe(password);
    expect(w.emu.sharing.portals.get(share.shareId)!.password).toBe(rot.password);
    expect((await w.call('share.password', { povId, shareId: share.shareId })).password).toBe(rot.password);

    await w.call('share.revoke', { povId, shareId: share.shareId });
    expect(w.emu.sharing.portals.size).toBe(0);
    const list = await w.call('share.list', { povId });
    expect(list.shares[0]).toMatchObject({ shareId: share.shareId, passwordStored: false });
    expect(list.shares[0]!.goneAt).not.toBeNull();
    await expect(w.call('share.password', { povId, shareId: share.shareId })).rejects.toMatchObject({ code: 'not_found' });
  }, 30_000);

  it('revoking a portal Skytap already deleted is a success', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 5 * DAY));
    const { share } = await w.call('share.create', { povId });
    w.emu.sharing.portals.delete(share.shareId); // deleted in Skytap's UI
    await expect(w.call('share.revoke', { povId, shareId: share.shareId })).resolves.toEqual({ ok: true });
    expect(w.emu.requests.at(-1)).toMatchObject({ method: 'DELETE', status: 404 });
    expect((await w.call('share.list', { povId })).shares[0]!.goneAt).not.toBeNull();
  }, 30_000);

  it('view_only is a 409 in the emulator, and portals disabled by an admin give a clear error that creates nothing', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 5 * DAY));
    expect((await postPortal(w, 'view_only')).status).toBe(409);

    w.emu.sharing.portalsDisabled = true;
    const err = await w.call('share.create', { povId }).then(
      () => ({ code: 'none', message: 'it succeeded' }),
      (e: unknown) => e as { code: string; message: string },
    );
    expect(err).toMatchObject({ code: 'forbidden' });
    expect(err.message).toContain(PORTALS_DISABLED_MESSAGE);
    expect(err.message).toMatch(/administrator of the Skytap account can enable sharing portals/);
    expect((await w.call('share.list', { povId })).shares).toHaveLength(0);
  }, 30_000);

  it('a share link for a subset of VMs; an unknown VM is refused before anything is sent', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 5 * DAY));
    const { vms } = await w.call('pov.get', { id: povId });
    const notControl = vms.filter((v) => v.name !== 'control-node').map((v) => v.vmId);
    const { share } = await w.call('share.create', { povId, vmIds: notControl, access: 'use', runtimeLimitMinutes: 600 });
    expect(share.vmIds.sort()).toEqual([...notControl].sort());
    expect(share).toMatchObject({ access: 'use', runtimeLimitMinutes: 600, runtimeLeftSeconds: 36000 });
    await expect(w.call('share.create', { povId, vmIds: ['424242'] })).rejects.toMatchObject({ code: 'invalid_request' });
    expect(portalPosts(w)).toHaveLength(1);
  }, 30_000);
});

describe('share links and the POV list', () => {
  it('create, extend, revoke publish pov.updated with the row’s latest link expiry (not jobs, so nothing else told the list)', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 10 * DAY));
    await new Promise((r) => setTimeout(r, 50)); // the provision's last events have landed
    const seen = followPovUpdates(w.base.hub);
    const expiryEvent = (want: string | null) =>
      until(`an event with link expiry ${want}`, () => seen.find((p) => p.id === povId && p.readiness?.shareExpiresAt === want), 5_000, 20);

    const { share } = await w.call('share.create', { povId });
    await expiryEvent(share.expiresAt);
    const later = new Date(w.clock.now().getTime() + 5 * DAY);
    later.setMilliseconds(0);
    const extended = await w.call('share.extend', { povId, shareId: share.shareId, expiresAt: later.toISOString() });
    await expiryEvent(extended.share.expiresAt);
    await w.call('share.revoke', { povId, shareId: share.shareId });
    await expiryEvent(null);
  }, 60_000);
});
