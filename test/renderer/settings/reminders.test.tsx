import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import type { NotifySettings } from '../../../shared/contract/notify';
import { setTransport } from '../../../renderer/src/api';
import { Notifications } from '../../../renderer/src/components/share/notifications';
import Settings from '../../../renderer/src/pages/settings';
import ReminderSettings from '../../../renderer/src/pages/settings/reminder-settings';
import { useNotify } from '../../../renderer/src/state/notify';
import { testCore } from '../../foundation/helpers';
import { coreTransport } from '../core-transport';

/** Settings → Reminders and auto-delete over a real core (SQLite, the notify service). */
describe('Settings: reminders and auto-delete', () => {
  let core: Core;
  const stored = async () => (await core.dispatcher.call('notify.getSettings', {}, { transport: 'test' })) as NotifySettings;
  const panel = () => screen.getByRole('form', { name: 'Warning settings' });
  const field = (label: string) => within(panel()).getByLabelText(label) as HTMLInputElement;
  const type = (label: string, value: string) => fireEvent.change(field(label), { target: { value } });

  beforeEach(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
    useNotify.setState(useNotify.getInitialState());
  });
  afterEach(async () => {
    cleanup();
    setTransport(null);
    window.history.replaceState(null, '', '#/');
    await core.close();
  });

  it('shows the saved steps and days, and Save stores new ones (the steps sorted, repeats dropped)', async () => {
    render(<ReminderSettings />);
    await waitFor(() => expect(field('Warning steps').value).toBe('168, 72, 24, 1'));
    expect(field('Auto-delete days').value).toBe('30');
    type('Warning steps', '2 48, 48');
    type('Auto-delete days', '14');
    await act(async () => {
      fireEvent.submit(panel());
    });
    await screen.findByText(/^Saved\./);
    expect(await stored()).toMatchObject({ ladderHours: [48, 2], autoDeleteDays: 14 });
    expect(field('Warning steps').value).toBe('48, 2'); // what the core stored
  });

  it('bad input says what is wrong and changes nothing: half hours, no steps, nine steps, over 90 days, 0 or 366 days', async () => {
    render(<ReminderSettings />);
    await waitFor(() => expect(field('Warning steps').value).toBe('168, 72, 24, 1'));
    const before = await stored();
    const cases: [string, string, RegExp][] = [
      ['24, 1.5', '30', /1 to 8 whole hours/],
      [' , ', '30', /1 to 8 whole hours/],
      ['9 8 7 6 5 4 3 2 1', '30', /1 to 8 whole hours/],
      ['2161', '30', /at most 2160/],
      ['24', '0', /1 to 365/],
      ['24', '366', /1 to 365/],
    ];
    for (const [hours, days, says] of cases) {
      type('Warning steps', hours);
      type('Auto-delete days', days);
      await act(async () => {
        fireEvent.submit(panel());
      });
      const alert = await screen.findByRole('alert');
      expect(alert.textContent, hours).toMatch(says);
      expect(await stored(), hours).toEqual(before);
    }
  });

  it('do not disturb set here is the one the notification list shows, and the list links here', async () => {
    render(
      <>
        <Notifications />
        <ReminderSettings />
      </>,
    );
    const here = await screen.findByRole('checkbox', { name: /Do not disturb \(only urgent/ });
    await waitFor(() => expect((here as HTMLInputElement).disabled).toBe(false));
    await act(async () => {
      fireEvent.click(here);
    });
    await waitFor(async () => expect((await stored()).doNotDisturb).toBe(true));
    fireEvent.click(screen.getByRole('button', { name: /Notifications/ }));
    expect((screen.getByRole('checkbox', { name: 'Do not disturb' }) as HTMLInputElement).checked).toBe(true);
    fireEvent.click(screen.getByRole('button', { name: 'Warning steps and auto-delete days (Settings)' }));
    expect(window.location.hash).toBe('#/settings/reminders');
    expect(screen.queryByRole('region', { name: 'Notifications' })).toBeNull(); // the list closed
  });

  it('is a panel of the Settings page; opened as #/settings/reminders it is shown and focused', async () => {
    window.history.replaceState(null, '', '#/settings/reminders');
    render(<Settings />);
    const panel = screen.getByRole('region', { name: 'Reminders and auto-delete' });
    expect(document.activeElement).toBe(panel);
  });
});
