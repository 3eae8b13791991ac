import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSkytapTime } from '../../main/services/skytap/share-api';
import { PORTAL_GONE_GRACE_MS } from '../../main/services/share/service';
import { getPov, insertPov, updatePov } from '../../main/services/pov/repo';
import { createPov, DAY, HOUR, postPortal, shareWorld, type ShareTestWorld } from './helpers';
import { JOB_KIND } from '../../shared/contract/job-kinds';
import type { NotificationView } from '../../shared/contract/notify';
import { bothZones } from '../../shared/time-zones';
import { osNotificationOptions } from '../../main/electron/notification-text';

let w: ShareTestWorld;
afterEach(async () => {
  await w?.close();
});

async function sweep(w: ShareTestWorld) {
  const { jobId } = await w.call('reconcile.runNow', {});
  const job = await w.base.jobs.wait(jobId);
  expect(job.state, JSON.stringify(job.error)).toBe('succeeded');
  return job;
}

function ladderRows(w: ShareTestWorld, povId: string) {
  return w.db.prepare('SELECT delete_at, step, outcome FROM ladder_steps WHERE pov_id = ? ORDER BY at, step').all(povId) as {
    delete_at: string;
    step: string;
    outcome: string;
  }[];
}

describe('auto-delete', () => {
  it('every POV gets the default time and a delete_at_end schedule ending then; pov.get shows both and the next warning', async () => {
    w = await shareWorld();
    const t0 = w.clock.now().getTime();
    const povId = await createPov(w);
    const { pov } = await w.call('pov.get', { id: povId });
    const at = new Date(pov.autoDelete!.at!).getTime();
    expect(Math.abs(at - (t0 + 30 * DAY))).toBeLessThan(60_000);
    expect(pov.autoDelete).toMatchObject({ status: 'armed', nextWarning: { step: '7d' }, lastWarning: null });
    const [sch] = [...w.emu.sharing.schedules.values()];
    expect(sch).toMatchObject({ envId: pov.envId, deleteAtEnd: true, id: pov.autoDelete!.scheduleId });
    expect(Math.abs(sch!.endAt - at)).toBeLessThan(1000);
  }, 30_000);

  it('a bad auto-delete time at create is refused and creates nothing', async () => {
    w = await shareWorld();
    const templateId = [...w.emu.state.templates.keys()][0]!;
    const past = new Date(w.clock.now().getTime() - HOUR).toISOString();
    await expect(w.call('pov.create', { templateId, name: 'Past', autoDeleteAt: past })).rejects.toMatchObject({ code: 'invalid_request' });
    expect((await w.call('pov.list', { includeDestroyed: true })).povs).toHaveLength(0);
    expect(w.emu.count('POST /configurations')).toBe(0);
  });

  it('a POV created without a schedule is flagged by the next sweep, and Re-arm fixes it', async () => {
    w = await shareWorld();
    w.emu.faults.push({ match: 'POST /v2/schedules', status: 422, message: 'Schedules are not allowed for this user' });
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 9 * DAY));
    let { pov } = await w.call('pov.get', { id: povId });
    expect(pov.state).toBe('active'); // the provision did not fail
    expect(pov.autoDelete!.status).toBe('not_armed');
    expect(w.emu.sharing.schedules.size).toBe(0);
    // the sweep says why, once, and notifies
    await sweep(w);
    ({ pov } = await w.call('pov.get', { id: povId }));
    expect(pov.autoDelete!.status).toBe('not_armed');
    expect(pov.autoDelete!.reason).toMatch(/No Skytap schedule deletes environment/);
    await sweep(w);
    const notes = (await w.call('notify.list', {})).items.filter((n) => n.kind === 'auto_delete');
    expect(notes).toHaveLength(1);
    expect(notes[0]!.title).toMatch(/Auto-delete not armed/);
    // Re-arm = set the same time again
    const re = await w.call('pov.setAutoDelete', { povId, at: pov.autoDelete!.at! });
    expect(re.pov.autoDelete!.status).toBe('armed');
    expect(w.emu.sharing.schedules.size).toBe(1);
    await sweep(w);
    expect((await w.call('pov.get', { id: povId })).pov.autoDelete!.status).toBe('armed');
  }, 30_000);

  it(
    'a local POV is not judged by the sweep: its platform has no schedules, so it is never flagged or notified (it was, beside a ' +
      'Skytap POV)',
    async () => {
      w = await shareWorld();
      await createPov(w); // a Skytap POV, armed: the sweep lists schedules
      const at = w.clock.now().toISOString();
      insertPov(w.db, {
        id: 'local-pov-1',
        name: 'Rehearsal',
        templateId: 'povdesk-test',
        templateName: 'POV Desk test',
        envName: 'povdesk-local-pov',
        at,
        platform: 'local',
      });
      updatePov(w.db, 'local-pov-1', { env_id: 'povdesk-local-po', state: 'active' }, at);
      const r = await w.share.autoDelete.sweep([]);
      expect(r.notArmed).toEqual([]);
      expect(getPov(w.db, 'local-pov-1')).toMatchObject({ auto_delete_status: null, auto_delete_reason: null });
      expect((await w.call('notify.list', {})).items.filter((n) => n.kind === 'auto_delete')).toEqual([]);
    },
    30_000,
  );

  it('a schedule moved outside the app is flagged; setAutoDelete moves it and clamps share links', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 9 * DAY));
    const { share } = await w.call('share.create', { povId });
    const sch = [...w.emu.sharing.schedules.values()][0]!;
    sch.endAt += DAY;
    await sweep(w);
    expect((await w.call('pov.get', { id: povId })).pov.autoDelete!.reason).toMatch(/not at the auto-delete time/);
    const earlier = new Date(Math.floor((w.clock.now().getTime() + 2 * DAY) / 1000) * 1000);
    const { pov } = await w.call('pov.setAutoDelete', { povId, at: earlier.toISOString() });
    expect(pov.autoDelete).toMatchObject({ status: 'armed', at: earlier.toISOString() });
    expect(Math.abs(w.emu.sharing.schedules.get(sch.id)!.endAt - earlier.getTime())).toBeLessThan(1000);
    const portal = w.emu.sharing.portals.get(share.shareId)!;
    expect(parseSkytapTime(portal.expirationDate)!.getTime()).toBeLessThanOrEqual(earlier.getTime());
    expect((await w.call('share.list', { povId })).shares[0]!.expiresAt).toBe(earlier.toISOString());
  }, 30_000);

  it('delete_at_end reaps the environment when the schedule ends, and the sweep marks the POV destroyed', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 3 * DAY));
    await w.call('share.create', { povId });
    w.clock.advance(3 * DAY + HOUR);
    await sweep(w); // its listing ticks the emulator: the schedule ended and the delete began
    await new Promise((r) => setTimeout(r, 150)); // the emulator's asynchronous delete (60 ms)
    await sweep(w);
    const { pov } = await w.call('pov.get', { id: povId });
    expect(pov.state).toBe('destroyed');
    expect(w.emu.state.environmentIds()).toEqual([]);
    expect(w.emu.sharing.schedules.size).toBe(0);
    // its share link went with it, and so did the password in the keychain
    await new Promise((r) => setTimeout(r, 50));
    const { shares } = await w.call('share.list', { povId });
    expect(shares[0]!.goneAt).not.toBeNull();
    expect(await w.base.secrets.get(`share-password:${povId}:${shares[0]!.shareId}`)).toBeNull();
  }, 30_000);

  it(
    'the sweep reads portals from the environment body (no request per POV): one made outside shows as not managed here, a deleted ' +
      'one as gone',
    async () => {
      w = await shareWorld();
      const povId = await createPov(w, new Date(w.clock.now().getTime() + 9 * DAY));
      const { share } = await w.call('share.create', { povId });
      const outside = await postPortal(w, 'use').then((r) => r.json() as Promise<{ id: string }>);
      w.emu.sharing.portals.delete(share.shareId);
      const before = w.emu.requests.length;
      await sweep(w);
      const during = w.emu.requests.slice(before).map((r) => `${r.method} ${r.path}`);
      expect(during.filter((p) => p.includes('publish_sets'))).toEqual([]);
      expect(during.filter((p) => p.startsWith('GET /v2/schedules'))).toHaveLength(1);
      const { shares } = await w.call('share.list', { povId });
      expect(shares.find((s) => s.shareId === outside.id)).toMatchObject({ managed: false, passwordStored: false, goneAt: null });
      // a link younger than the grace may have been made while the listing was on its way: kept
      expect(shares.find((s) => s.shareId === share.shareId)!.goneAt).toBeNull();
      await expect(w.call('share.password', { povId, shareId: outside.id })).rejects.toMatchObject({ message: /created outside POV Desk/ });

      w.clock.advance(PORTAL_GONE_GRACE_MS);
      await sweep(w);
      const after = (await w.call('share.list', { povId })).shares;
      expect(after.find((s) => s.shareId === share.shareId)!.goneAt).not.toBeNull();
      expect(after.find((s) => s.shareId === outside.id)!.goneAt).toBeNull();
      // the deleted portal's password leaves the keychain with it, while the POV lives on
      expect(await w.base.secrets.get(`share-password:${povId}:${share.shareId}`)).toBeNull();
    },
    30_000,
  );
});

describe('the idle warning', () => {
  it('a POV reached through its gateway with suspend_on_idle set warns in the Share panel', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 9 * DAY));
    const envId = w.emu.state.environmentIds()[0]!;
    w.emu.sharing.suspendOnIdle.set(envId, 7200);
    await sweep(w);
    expect((await w.call('share.list', { povId })).idleWarning).toBeNull(); // no gateway yet
    w.db.prepare("UPDATE povs SET control_node_status = 'enrolled' WHERE id = ?").run(povId);
    expect((await w.call('share.list', { povId })).idleWarning).toMatch(/suspends after 120 min idle.*POV Gateway/);
    w.emu.sharing.suspendOnIdle.delete(envId);
    await sweep(w);
    expect((await w.call('share.list', { povId })).idleWarning).toBeNull();
  }, 30_000);
});

describe('the warning ladder', () => {
  it('each step fires once, across a restart only the latest missed step fires, and Extend re-arms without firing again', async () => {
    w = await shareWorld();
    const deleteAt = new Date(Math.floor((w.clock.now().getTime() + 10 * DAY) / 1000) * 1000);
    const povId = await createPov(w, deleteAt);
    const iso = deleteAt.toISOString();
    expect(w.share.ladder.tick()).toEqual([]);

    w.clock.advance(3 * DAY + HOUR); // 7 d step due (6 d 23 h left)
    expect(w.share.ladder.tick().map((f) => f.step)).toEqual(['7d']);
    expect(w.share.ladder.tick()).toEqual([]);
    expect(w.share.ladder.tick()).toEqual([]);
    expect((await w.call('pov.get', { id: povId })).pov.autoDelete).toMatchObject({ lastWarning: '7d', nextWarning: { step: '3d' } });

    await w.restart();
    expect(w.share.ladder.tick()).toEqual([]); // fired before the restart: not again

    // closed across the 3 d and 24 h steps: at start only the latest (24 h) fires
    await w.restart();
    w.clock.advance(6 * DAY + 2 * HOUR); // 21 h left
    const fired = w.share.ladder.tick();
    expect(fired).toEqual([{ povId, step: '24h', deleteAt: iso, skipped: ['3d'] }]);
    expect(ladderRows(w, povId).map((r) => `${r.step}:${r.outcome}`)).toEqual(['7d:fired', '24h:fired', '3d:skipped']);
    let notes = (await w.call('notify.list', {})).items.filter((n) => n.kind === 'ladder');
    expect(notes.map((n) => n.title)).toEqual([`POV "Acme POV" is deleted in 21 hours`, `POV "Acme POV" is deleted in 7 days`]);
    expect(notes.every((n) => !n.urgent)).toBe(true);

    // Extend by 3 days: the pending warnings are withdrawn and the ladder re-arms for the new time
    const extended = new Date(deleteAt.getTime() + 3 * DAY);
    await w.call('pov.setAutoDelete', { povId, at: extended.toISOString() });
    notes = (await w.call('notify.list', {})).items.filter((n) => n.kind === 'ladder');
    // the two warnings of the old time are withdrawn; the new time's 7 d step is due at once and fires
    expect(notes.map((n) => [n.title, n.withdrawnAt !== null])).toEqual([
      [`POV "Acme POV" is deleted in 4 days`, false],
      [`POV "Acme POV" is deleted in 21 hours`, true],
      [`POV "Acme POV" is deleted in 7 days`, true],
    ]);
    // now 3 d 21 h left: the 7 d step of the NEW time is due and fires once; the old ones do not come back
    const after = ladderRows(w, povId).filter((r) => r.delete_at === extended.toISOString());
    expect(after.map((r) => `${r.step}:${r.outcome}`)).toEqual(['7d:fired']);
    expect(w.share.ladder.tick()).toEqual([]);

    // the last step is urgent
    w.clock.advance(3 * DAY + 20 * HOUR + 30 * 60_000); // 30 min left
    const last = w.share.ladder.tick();
    expect(last.map((f) => f.step)).toEqual(['1h']);
    expect(last[0]!.skipped).toEqual(['24h', '3d']);
    const urgent = (await w.call('notify.list', {})).items.find((n) => n.kind === 'ladder' && n.withdrawnAt === null && n.urgent);
    expect(urgent?.title).toMatch(/deleted in 30 minutes/);
    expect(w.share.ladder.tick()).toEqual([]);
  }, 30_000);

  it("the OS notification shows the deletion time in the SE's zone with the customer's beside it, never as ISO", async () => {
    w = await shareWorld();
    const published: NotificationView[] = [];
    w.base.hub.subscribe('notify.event', '*', { send: (_s, _k, data) => published.push(data as NotificationView), unacked: new Map() });
    const deleteAt = new Date(Math.floor((w.clock.now().getTime() + 10 * DAY) / 1000) * 1000);
    const povId = await createPov(w, deleteAt);
    await w.call('pov.setCustomerTz', { povId, customerTz: 'Asia/Tokyo' });
    w.clock.advance(3 * DAY + HOUR); // the 7 d step
    expect(w.share.ladder.tick().map((f) => f.step)).toEqual(['7d']);
    const n = published.find((p) => p.kind === 'ladder')!;
    expect(n.body).toContain(deleteAt.toISOString()); // the core's text: one instant, machine-readable
    // what Electron's Notification gets (main/electron/index.ts reads the zone the same way)
    const tz = (await w.call('pov.get', { id: povId })).pov.customerTz ?? null;
    const os = osNotificationOptions(n, tz, 'Europe/Berlin');
    expect(os.body).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(os.body).toContain(bothZones(deleteAt.toISOString(), 'Asia/Tokyo', 'Europe/Berlin'));
    expect(os.body).toMatch(/Europe\/Berlin · .* Asia\/Tokyo customer/);
    // no customer zone: the SE's alone
    expect(osNotificationOptions(n, null, 'Europe/Berlin').body).not.toContain('customer');
    expect(os).toMatchObject({ title: n.title, urgency: 'normal', timeoutType: 'default' });
  }, 30_000);

  it('do-not-disturb holds every step but the last; identical events fold into one', async () => {
    w = await shareWorld();
    const published: string[] = [];
    w.base.hub.subscribe('notify.event', '*', {
      send: (_s, _k, data) => published.push((data as { title: string }).title),
      unacked: new Map(),
    });
    await w.call('notify.setSettings', { doNotDisturb: true });
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 2 * DAY));
    // 2 days left at create: the 3 d step was due at once and fired when the schedule was armed
    expect(w.share.ladder.lastFired(povId, (await w.call('pov.get', { id: povId })).pov.autoDelete!.at!)).toBe('3d');
    w.clock.advance(DAY + HOUR); // 23 h left: 24 h step
    expect(w.share.ladder.tick().map((f) => f.step)).toEqual(['24h']);
    w.clock.advance(22 * HOUR + 30 * 60_000); // 30 min left: the last step
    expect(w.share.ladder.tick().map((f) => f.step)).toEqual(['1h']);
    const { items } = await w.call('notify.list', {});
    const ladder = items.filter((n) => n.kind === 'ladder');
    expect(ladder.map((n) => [n.held, n.urgent])).toEqual([
      [false, true],
      [true, false],
      [true, false],
    ]);
    expect(published).toEqual([ladder[0]!.title]);
    for (let i = 0; i < 100; i++) w.share.notify.push({ kind: 'auto_delete', povId, title: 'Same thing', body: 'again' });
    const same = (await w.call('notify.list', {})).items.filter((n) => n.title === 'Same thing');
    expect(same).toHaveLength(1);
    expect(same[0]!.count).toBe(100);
  }, 30_000);
});

describe('the share link password', () => {
  it('never reaches SQLite, the log or a job record (byte scan of every file after a run)', async () => {
    w = await shareWorld();
    const povId = await createPov(w, new Date(w.clock.now().getTime() + 9 * DAY));
    const passwords: string[] = [];
    const a = await w.call('share.create', { povId });
    passwords.push(a.password);
    passwords.push((await w.call('share.rotatePassword', { povId, shareId: a.share.shareId })).password);
    const b = await w.call('share.create', { povId, access: 'use' });
    passwords.push(b.password);
    await w.call('share.revoke', { povId, shareId: a.share.shareId });
    await sweep(w);
    w.base.log.info('share link made', { password: b.password, note: `pw ${b.password}` }); // even a careless line is redacted
    w.db.pragma('wal_checkpoint(FULL)');
    // Every regular file under the core's home: the database and its WAL, logs/, owner.json.
    const files = (readdirSync(w.dir, { recursive: true }) as string[]).map((f) => join(w.dir, f)).filter((f) => statSync(f).isFile());
    expect(files.some((f) => f.endsWith('.db'))).toBe(true);
    expect(files.some((f) => f.endsWith('.log'))).toBe(true);
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const pw of passwords) {
        expect(bytes.includes(Buffer.from(pw)), `${pw} found in ${f}`).toBe(false);
        expect(bytes.includes(Buffer.from(pw.replace(/-/g, ''))), `${pw} (no hyphens) found in ${f}`).toBe(false);
      }
    }
    const jobs = JSON.stringify(w.db.prepare('SELECT * FROM jobs').all()) + JSON.stringify(w.db.prepare('SELECT * FROM job_log').all());
    for (const pw of passwords) expect(jobs.includes(pw)).toBe(false);
    // nor the diagnostics bundle a user attaches to a bug report
    const diag = JSON.stringify(await w.call('app.diagnostics', {}));
    expect(diag).toContain('share link made'); // the careless log line above is in the bundle, redacted
    for (const pw of passwords) expect(diag.includes(pw)).toBe(false);
    // and the emulator did receive them (the scan looked for the right bytes)
    expect(w.emu.sharing.passwordsReceived).toEqual(passwords);
  }, 30_000);
});

describe('job notifications', () => {
  it(
    'a job that ran over 60 s notifies once when it ends; a shorter one or a routine one does not (notify hears job.changed on the ' +
      'hub)',
    async () => {
      w = await shareWorld();
      const job = (id: string, ms: number, routine = false) => ({
        id,
        kind: JOB_KIND.povCreate,
        title: `Create POV "${id}"`,
        subject: null,
        routine,
        state: 'succeeded' as const,
        progress: { step: 'done', fraction: 1, message: '' },
        createdAt: '2026-01-01T00:00:00.000Z',
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString(),
        error: null,
        result: null,
      });
      const shown: unknown[] = [];
      w.base.hub.subscribe('notify.event', '*', { unacked: new Map(), send: (_s, _k, data) => void shown.push(data) });
      // Through the hub, as the JobRunner announces every change: the core wires no reaction itself.
      w.base.hub.emit('job.changed', job('long', 61_000));
      w.base.hub.emit('job.changed', job('long', 61_000)); // the same end reported twice
      w.base.hub.emit('job.changed', job('short', 59_000));
      w.base.hub.emit('job.changed', job('sweep', 120_000, true));
      const jobs = (await w.call('notify.list', {})).items.filter((n) => n.kind === 'job');
      expect(jobs.map((n) => [n.title, n.body, n.count])).toEqual([['Create POV "long" finished', 'after 61 s', 2]]);
      // shown once: the repeat only counts
      expect(shown).toEqual([expect.objectContaining({ title: 'Create POV "long" finished', count: 1 })]);
    },
  );
});
