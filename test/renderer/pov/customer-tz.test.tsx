import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { bothZones, seTimeZone, withZones } from '../../../renderer/src/components/pov/time';
import PovsPage from '../../../renderer/src/pages/povs-page';
import type { Emulator } from '../../skytap-emulator/emulator';
import { povPageWorld } from './pov-core';

// 2026-12-01 17:00 UTC: 18:00 in Berlin, 12:00 in New York, 02:00 on Dec 2 in Tokyo
const AT = '2026-12-01T17:00:00.000Z';

describe('bothZones', () => {
  it("shows the SE's zone and the customer's beside it when they differ", () => {
    const s = bothZones(AT, 'America/New_York', 'Europe/Berlin');
    expect(s).toMatch(/^Dec 1, 2026,? 6:00\s?PM Europe\/Berlin · 12:00\s?PM America\/New_York customer$/);
  });
  it('repeats the date only when it is another day for the customer', () => {
    expect(bothZones(AT, 'Asia/Tokyo', 'Europe/Berlin')).toMatch(/· Dec 2, 2026,? 2:00\s?AM Asia\/Tokyo customer$/);
  });
  it("shows the SE's alone when the zones are the same, none is set, or the renderer does not know it", () => {
    expect(bothZones(AT, 'Europe/Berlin', 'Europe/Berlin')).toMatch(/^Dec 1, 2026,? 6:00\s?PM Europe\/Berlin$/);
    expect(bothZones(AT, null, 'Europe/Berlin')).not.toContain('customer');
    expect(bothZones(AT, 'Nowhere/Land', 'Europe/Berlin')).toMatch(/^Dec 1, 2026,? 6:00\s?PM Europe\/Berlin$/);
    expect(bothZones('not a time', 'UTC', 'Europe/Berlin')).toBe('not a time');
  });
  it('rewrites the ISO instants in a readiness detail from the core, and nothing else', () => {
    const se = seTimeZone();
    const out = withZones('Armed for 2026-12-01T17:00:00.000Z (in 720 h); job 2026-x stays.', 'Asia/Tokyo');
    expect(out).toBe(`Armed for ${bothZones(AT, 'Asia/Tokyo', se)} (in 720 h); job 2026-x stays.`);
    expect(out).toContain('Asia/Tokyo customer');
  });
});

/** The customer's zone set in the Create dialog, shown on the POV page and the row, edited and cleared there. */
describe('customer time zone in the POV pages (real core, emulator)', () => {
  let core: Core;
  let emu: Emulator;
  beforeEach(async () => {
    ({ core, emu } = await povPageWorld());
    await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
  });
  afterEach(async () => {
    cleanup();
    await core.close();
    await emu.close();
  });

  it('create with a zone, see it beside the SE’s, refuse a bad one, change and clear it', async () => {
    const se = seTimeZone();
    expect(se).not.toBe('America/New_York'); // the test reads the customer's zone apart from the SE's
    render(<PovsPage />);
    fireEvent.click(await screen.findByRole('button', { name: 'New POV' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create POV' });
    fireEvent.click(await within(dialog).findByRole('option', { name: /Windows AD lab/ }, { timeout: 10_000 }));
    fireEvent.change(within(dialog).getByLabelText('POV name'), { target: { value: 'Initech' } });
    await waitFor(() => expect((within(dialog).getByLabelText('Auto-delete') as HTMLInputElement).value).not.toBe(''));
    fireEvent.change(within(dialog).getByLabelText('Customer time zone'), { target: { value: 'us/eastern' } });
    expect(within(dialog).getByTestId('create-times').textContent).toContain('us/eastern customer');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());

    // the row's expanded details: both zones for the deletion time
    fireEvent.click(await screen.findByRole('button', { name: 'Show details for Initech' }));
    const details = await screen.findByTestId('pov-details');
    const line = (k: string) => within(details).getByText(k).nextElementSibling!.textContent!;
    expect(line('Deletes at')).toMatch(new RegExp(` ${se} · .* America/New_York customer$`));
    expect(line('Next warning')).toMatch(/^7d before: .* America\/New_York customer$/);

    fireEvent.click(screen.getByRole('button', { name: 'Initech' }));
    const field = await screen.findByRole('form', { name: 'Customer time zone' });
    const input = within(field).getByLabelText('Customer time zone') as HTMLInputElement;
    expect(input.value).toBe('America/New_York'); // stored canonical
    const at = await screen.findByTestId('auto-delete-at');
    expect(at.textContent).toContain(` ${se} · `);
    expect(at.textContent).toMatch(/America\/New_York customer$/);

    // a bad zone: a clear error, nothing changes
    fireEvent.change(input, { target: { value: 'Mars/Olympus_Mons' } });
    await act(async () => {
      fireEvent.click(within(field).getByRole('button', { name: 'Save' }));
    });
    expect((await within(field).findByRole('alert')).textContent).toMatch(/IANA/);
    expect(core.base.db.prepare('SELECT customer_tz FROM povs').get()).toEqual({ customer_tz: 'America/New_York' });
    expect(screen.getByTestId('auto-delete-at').textContent).toMatch(/America\/New_York customer$/);

    fireEvent.change(input, { target: { value: 'Asia/Tokyo' } });
    await act(async () => {
      fireEvent.click(within(field).getByRole('button', { name: 'Save' }));
    });
    await waitFor(() => expect(screen.getByTestId('auto-delete-at').textContent).toMatch(/Asia\/Tokyo customer$/));
    // the checklist's auto-delete item (its text comes from the core with an ISO time) in both zones
    const checklist = screen.getByTestId('readiness-checklist');
    await waitFor(() =>
      expect(checklist.querySelector('[data-item="autoDelete"]')!.textContent).toMatch(new RegExp(` ${se} · .*Asia/Tokyo customer`)),
    );

    await act(async () => {
      fireEvent.click(within(screen.getByRole('form', { name: 'Customer time zone' })).getByRole('button', { name: 'Clear' }));
    });
    await waitFor(() => expect(screen.getByTestId('auto-delete-at').textContent).not.toContain('customer'));
    expect(screen.getByTestId('auto-delete-at').textContent).toContain(se);
    expect(core.base.db.prepare('SELECT customer_tz FROM povs').get()).toEqual({ customer_tz: null });
  }, 40_000);
});
