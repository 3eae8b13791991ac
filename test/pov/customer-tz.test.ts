import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../main/services/store/db';
import { migrations } from '../../main/services/store/migrations';
import { povMethods } from '../../shared/contract/pov';
import { tempHome } from '../foundation/helpers';
import { testCore, type TestCore } from '../support/core';

/**
 * The customer's time zone (issue 19): migration 8 on a real SQLite file, the contract's check of
 * the name, and the service storing the canonical spelling through pov.create and pov.setCustomerTz.
 */
let core: TestCore | null = null;
afterEach(async () => {
  await core?.close();
  core = null;
});

describe('migration 8: povs.customer_tz', () => {
  it('adds the column to a database at version 7, keeping its rows (NULL: not given)', () => {
    const file = join(tempHome(), 'povdesk.db');
    const old = openDatabase(
      file,
      migrations.filter((m) => m.version <= 7),
    );
    expect(old.pragma('user_version', { simple: true })).toBe(7);
    old
      .prepare(
        "INSERT INTO povs (id, name, template_id, template_name, skytap_name, state, created_at, updated_at) VALUES ('p1', 'Old', " +
          "'t', '', 'Old [x]', 'active', 'x', 'x')",
      )
      .run();
    old.close();
    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(Math.max(...migrations.map((m) => m.version)));
    expect(db.prepare("SELECT name, customer_tz FROM povs WHERE id = 'p1'").get()).toEqual({ name: 'Old', customer_tz: null });
    db.close();
  });
});

describe('the customer time zone in the contract', () => {
  const create = povMethods['pov.create'].args;
  const set = povMethods['pov.setCustomerTz'].args;
  it.each(['+01:00', 'Mars/Olympus_Mons', '', '   ', 'Europe/Berlin; DROP TABLE povs', 'x'.repeat(65)])(
    'refuses %j with a clear message',
    (tz) => {
      const r = set.safeParse({ povId: 'p1', customerTz: tz });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.message).toMatch(/IANA|too|characters|Too/i);
      expect(create.safeParse({ templateId: '500', name: 'A', customerTz: tz }).success).toBe(false);
    },
  );
  it.each(['America/New_York', 'europe/berlin', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5'])('accepts %j', (tz) => {
    expect(set.safeParse({ povId: 'p1', customerTz: tz }).success).toBe(true);
  });
  it('null clears; the field is optional on create', () => {
    expect(set.safeParse({ povId: 'p1', customerTz: null }).success).toBe(true);
    expect(create.safeParse({ templateId: '500', name: 'A' }).success).toBe(true);
  });
});

describe('pov.create and pov.setCustomerTz store the canonical IANA name', () => {
  it('create keeps it with the row; set changes and clears it; a bad zone or POV changes nothing', async () => {
    core = await testCore();
    const t = core;
    const call: TestCore['call'] = (method, args) => t.call(method, args);
    // no Skytap token: the create job fails, but the row (and its zone) exist from the start
    const { jobId } = await call('pov.create', { templateId: '500', name: 'Acme', customerTz: 'us/eastern' });
    await core.base.jobs.wait(jobId);
    const { povs } = await call('pov.list', {});
    expect(povs).toHaveLength(1);
    const pov = povs[0]!;
    expect(pov.customerTz).toBe('America/New_York');
    expect(core.base.db.prepare('SELECT customer_tz FROM povs WHERE id = ?').get(pov.id)).toEqual({ customer_tz: 'America/New_York' });

    const moved = await call('pov.setCustomerTz', { povId: pov.id, customerTz: 'europe/berlin' });
    expect(moved.pov.customerTz).toBe('Europe/Berlin');
    expect((await call('pov.get', { id: pov.id })).pov.customerTz).toBe('Europe/Berlin');

    // the service checks again for callers inside main that skip the contract
    const svc = core.services.pov;
    expect(() => svc.setCustomerTz(pov.id, '+01:00')).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/IANA/) }),
    );
    expect(() => svc.setCustomerTz(pov.id, 'Nowhere/Land')).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    expect(() => svc.setCustomerTz('no-such-pov', 'UTC')).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect((await call('pov.get', { id: pov.id })).pov.customerTz).toBe('Europe/Berlin');

    const cleared = await call('pov.setCustomerTz', { povId: pov.id, customerTz: null });
    expect(cleared.pov.customerTz).toBeNull();

    // a create with a bad zone leaves no row behind
    expect(() => svc.create({ templateId: '500', name: 'Bad', customerTz: 'Mars/Olympus_Mons' })).toThrow(
      expect.objectContaining({ code: 'invalid_request' }),
    );
    expect((await call('pov.list', {})).povs.map((p) => p.name)).toEqual(['Acme']);
  });
});
