import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { freeLoopbackPort } from '../../../main/lib/procs';
import { PLATFORMS } from '../../../shared/lab-platforms';
import { setTransport } from '../../../renderer/src/api';
import { LOCAL_PUBLISH_SETS_NOTE, LOCAL_SCHEDULES_NOTE, LOCAL_SUSPEND_NOTE } from '../../../renderer/src/state/lab';
import PovsPage from '../../../renderer/src/pages/povs-page';
import { usePovs } from '../../../renderer/src/state/pov';
import { useSettings } from '../../../renderer/src/state/settings';
import { useVms } from '../../../renderer/src/state/vms';
import { povCore } from './pov-core';

/**
 * The POVs page's lab platforms against a real core (no vm-manager is started by these: the
 * picker, the template lists and the refusals need none). The whole rehearsal, with QEMU, is the
 * E2E test/e2e/rehearse.spec.ts.
 */
let core: Core;

beforeEach(async () => {
  const made = await povCore();
  core = made.core;
  setTransport(made.transport);
  usePovs.setState({ povs: null, error: null, actionError: null, detail: {} });
  useSettings.setState({ view: null, error: null });
  useVms.setState({ connection: null, vms: null, images: null });
  window.confirm = () => true;
});
afterEach(async () => {
  cleanup();
  await core.close();
});

const call = (method: string, args: unknown) => core.dispatcher.call(method as never, args as never, { transport: 'test' });

async function openDialog() {
  fireEvent.click(await screen.findByRole('button', { name: 'New POV' }));
  return screen.findByRole('dialog', { name: 'Create POV' });
}

describe('Create POV: the lab platform', () => {
  it(
    'with no Skytap account, starts on This laptop: the bundled test template first, no auto-delete field and why; Skytap brings ' +
      'the field back',
    async () => {
      render(<PovsPage />);
      // the offer is there before the dialog: nothing is configured
      expect(await screen.findByRole('button', { name: 'Rehearse on this laptop' })).toBeTruthy();
      const dialog = await openDialog();
      const group = within(dialog).getByRole('group', { name: 'Lab platform' });
      await within(group).findByRole('radio', { name: /This laptop/ });
      expect(
        within(group)
          .getAllByRole('radio')
          .map((r) => r.parentElement!.textContent),
      ).toEqual([expect.stringMatching(/^Skytap/), expect.stringMatching(/^This laptop — VMs on this laptop's own vm-manager/)]);
      expect(within(group).queryByRole('radio', { name: /Remote vm-manager/ })).toBeNull();
      await waitFor(() => expect((within(group).getByRole('radio', { name: /This laptop/ }) as HTMLInputElement).checked).toBe(true));
      const options = await within(dialog).findAllByRole('option');
      expect(options[0]!.textContent).toMatch(/built in/);
      expect(options[0]!.textContent).toContain('id povdesk-test');
      expect(options[0]!.textContent).toContain('test-vm (povdesk-test)');
      expect(within(dialog).queryByLabelText('Auto-delete')).toBeNull();
      expect(within(dialog).getByTestId('no-auto-delete').textContent).toBe(
        `No auto-delete date: ${PLATFORMS.local.features.schedules.note}`,
      );

      fireEvent.click(within(group).getByRole('radio', { name: /Skytap/ }));
      expect(within(dialog).getByLabelText('Auto-delete')).toBeTruthy();
      expect(within(dialog).queryByTestId('no-auto-delete')).toBeNull();
      // Skytap's list needs the account this home does not have: its error, and no local template left behind
      expect((await within(dialog).findByRole('alert')).textContent).toMatch(/Skytap/);
      expect(within(dialog).queryAllByRole('option')).toHaveLength(0);
    },
  );

  it('with a remote vm-manager connection, offers Remote vm-manager (naming its URL) instead of This laptop', async () => {
    const url = `http://127.0.0.1:${await freeLoopbackPort()}`;
    await call('vm.setConnection', { mode: 'remote', url, token: 'a-token' });
    render(<PovsPage />);
    const dialog = await openDialog();
    const group = within(dialog).getByRole('group', { name: 'Lab platform' });
    const remote = await within(group).findByRole('radio', { name: /Remote vm-manager/ });
    expect(remote.parentElement!.textContent).toContain(url);
    expect(within(group).queryByRole('radio', { name: /This laptop/ })).toBeNull();
    // the offer names where it would run
    expect(screen.getByRole('button', { name: 'Rehearse on the remote vm-manager' })).toBeTruthy();
  });

  it(
    'a saved Skytap account shrinks the rehearsal offer to one button and starts the dialog on Skytap; removing the account brings ' +
      'the offer back',
    async () => {
      await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: 'http://127.0.0.1:9' });
      const { unmount } = render(<PovsPage />);
      await screen.findByText('No POVs yet');
      await waitFor(() => expect(useSettings.getState().view).not.toBeNull());
      // a way to rehearse stays visible: one button, not the first-launch card
      const offer = await screen.findByRole('region', { name: 'Rehearse' });
      expect(within(offer).getByRole('button', { name: 'Rehearse on this laptop' })).toBeTruthy();
      expect(offer.textContent).not.toContain('No Skytap account yet?');
      const dialog = await openDialog();
      expect((within(dialog).getByRole('radio', { name: /Skytap/ }) as HTMLInputElement).checked).toBe(true);
      expect(within(dialog).getByLabelText('Auto-delete')).toBeTruthy();
      unmount();

      // Remove Skytap account: as on first launch, the card and a dialog starting on This laptop
      await call('settings.removeSkytap', {});
      render(<PovsPage />);
      expect(await screen.findByText('No Skytap account yet? Rehearse on this laptop.')).toBeTruthy();
      const again = await openDialog();
      await waitFor(() => expect((within(again).getByRole('radio', { name: /This laptop/ }) as HTMLInputElement).checked).toBe(true));
    },
  );
});

describe('Rehearse on this laptop', () => {
  it('refuses clearly when the remote vm-manager cannot be reached, and creates nothing', async () => {
    const url = `http://127.0.0.1:${await freeLoopbackPort()}`;
    await call('vm.setConnection', { mode: 'remote', url, token: 'a-token' });
    render(<PovsPage />);
    fireEvent.click(await screen.findByRole('button', { name: 'Rehearse on the remote vm-manager' }));
    const offer = screen.getByRole('region', { name: 'Rehearse' });
    const alert = await within(offer).findByRole('alert', {}, { timeout: 20_000 });
    expect(alert.textContent).toMatch(/^cannot reach vm-manager at http:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/);
    expect((within(offer).getByRole('button', { name: 'Rehearse on the remote vm-manager' }) as HTMLButtonElement).disabled).toBe(false);
    const { povs } = (await call('pov.list', { includeDestroyed: true })) as { povs: unknown[] };
    expect(povs).toEqual([]);
  }, 30_000);
});

describe("the registry's reasons as the renderer shows them", () => {
  it("are the capability registry's words for local (no schedules, no publish sets, suspend is stop), none of them blank", () => {
    const local = PLATFORMS.local.features;
    expect(local.schedules.supported).toBe(false);
    expect(local.publishSets.supported).toBe(false);
    expect(LOCAL_SCHEDULES_NOTE).toBe(local.schedules.note);
    expect(LOCAL_PUBLISH_SETS_NOTE).toBe(local.publishSets.note);
    expect(local.suspend.supported).toBe(true);
    expect(LOCAL_SUSPEND_NOTE).toBe(local.suspend.note);
    for (const note of [LOCAL_SCHEDULES_NOTE, LOCAL_PUBLISH_SETS_NOTE, LOCAL_SUSPEND_NOTE]) expect(note.length).toBeGreaterThan(20);
  });
});
