import { describe, expect, it } from 'vitest';
import { generatePassword, PASSWORD_ALPHABET } from '../../main/services/share/password';
import { parseSkytapTime, shareApi, skytapTime } from '../../main/services/skytap/share-api';
import { handoutText, relativeTime } from '../../shared/share-handout';
import { client, emulator, failure } from '../skytap/helpers';
import { SEEDS } from '../skytap-emulator/seed';

async function envWithVms() {
  const emu = await emulator({ seed: SEEDS.demo });
  const env = emu.state.addEnvironment({ name: 'e', templateId: [...emu.state.templates.keys()][0]!, runstate: 'running' });
  const { c, retries } = client(emu);
  return { emu, env, api: shareApi(c), retries };
}

describe('sharing portals and schedules through the client', () => {
  it('a portal create refused with 423 is retried after Retry-After and made once', async () => {
    const { emu, env, api, retries } = await envWithVms();
    emu.faults.push({ match: 'POST /v2/configurations/*/publish_sets', status: 423, retryAfter: 2 });
    const p = await api.createPublishSet(env.id, {
      name: 'x',
      vmIds: [env.vms[0]!.id],
      access: 'use',
      password: generatePassword(),
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    expect(retries).toEqual([{ status: 423, waitMs: 2000, attempt: 1 }]);
    expect(emu.sharing.portals.size).toBe(1);
    expect(p.password).toMatch(/^\*+$/);
    expect(p.desktops_url).toMatch(/\/desktops$/);
    // reads carry keep_idle like every other read
    await api.listPublishSets(env.id);
    expect(emu.requests.filter((r) => r.method === 'GET').every((r) => r.query.keep_idle === 'true')).toBe(true);
  });

  it("a malformed expiration_date is Skytap's 422, reported as invalid_request", async () => {
    const { env, emu } = await envWithVms();
    const { c } = client(emu);
    const path = `/v2/configurations/${env.id}/publish_sets.json`;
    const e = await failure(
      c.sendOk('POST', path, { body: { vms: [{ vm_ref: `${emu.url}/vms/${env.vms[0]!.id}` }], expiration_date: 'next tuesday' } }),
    );
    expect(e.code).toBe('invalid_request');
    expect(e.message).toMatch(/Expiration date is not a valid date/);
  });

  it('a schedule is created, listed, moved, and deletes its environment when it ends', async () => {
    const { emu, env, api } = await envWithVms();
    const start = new Date();
    const s = await api.createSchedule({ title: 't', envId: env.id, startAt: start, endAt: new Date(start.getTime() + 3_600_000) });
    expect(s).toMatchObject({ configuration_id: env.id, delete_at_end: true });
    const later = new Date(Math.floor(start.getTime() / 1000) * 1000 + 7_200_000);
    await api.updateScheduleEnd(s.id, later);
    const [listed] = await api.listSchedules();
    expect(parseSkytapTime(listed!.end_at)!.getTime()).toBe(later.getTime());
    emu.state.advance(3_600_000 + 1000);
    emu.sharing.tick();
    expect(emu.state.environmentIds()).toEqual([env.id]); // moved: not yet
    emu.state.advance(3_600_000);
    emu.sharing.tick();
    emu.state.advance(1000); // the delete completes asynchronously
    expect(emu.state.environmentIds()).toEqual([]);
    expect(await api.listSchedules()).toEqual([]);
    expect(await api.deletePublishSet(env.id, '1')).toBe('already_gone');
  });
});

describe('formats', () => {
  it('Skytap times round-trip and offsets are honoured', () => {
    const d = new Date('2026-03-04T05:06:07Z');
    expect(skytapTime(d)).toBe('2026/03/04 05:06:07 +0000');
    expect(parseSkytapTime(skytapTime(d))!.toISOString()).toBe(d.toISOString());
    expect(parseSkytapTime('2026/03/04 06:06:07 +0100')!.toISOString()).toBe(d.toISOString());
    expect(parseSkytapTime('2026/03/04 06:06:07 -01:00')!.toISOString()).toBe('2026-03-04T07:06:07.000Z');
    expect(parseSkytapTime('2026-03-04T05:06:07Z')!.toISOString()).toBe(d.toISOString());
    expect(parseSkytapTime('soon')).toBeNull();
    expect(parseSkytapTime(null)).toBeNull();
  });

  it('passwords: 20 characters from the unambiguous alphabet in groups of four, all different', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const p = generatePassword();
      expect(p).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){4}$/);
      expect([...p.replace(/-/g, '')].every((ch) => PASSWORD_ALPHABET.includes(ch))).toBe(true);
      seen.add(p);
    }
    expect(seen.size).toBe(2000);
    expect(PASSWORD_ALPHABET).not.toMatch(/[01ilo]/);
  });

  it("the handout names the expiry in the customer's zone and holds no secret but the password", () => {
    const text = handoutText({
      povName: 'Acme',
      url: 'https://cloud.skytap.com/vms/abc/desktops',
      password: 'abcd-efgh-jkmn-pqrs-tuvw',
      expiresAt: '2026-12-24T18:00:00Z',
      timeZone: 'America/Chicago',
      runtimeLimitMinutes: 600,
    });
    expect(text).toContain('https://cloud.skytap.com/vms/abc/desktops');
    expect(text).toContain('abcd-efgh-jkmn-pqrs-tuvw');
    expect(text).toMatch(/Available until: Thu, Dec 24, 2026, 12:00 PM CST/);
    expect(text).toContain('up to 10 hours');
    expect(relativeTime('2026-01-04T00:00:00Z', Date.parse('2026-01-01T00:00:00Z'))).toBe('in 3 days');
    expect(relativeTime('2026-01-01T00:00:00Z', Date.parse('2026-01-01T05:00:00Z'))).toBe('5 hours ago');
  });
});
