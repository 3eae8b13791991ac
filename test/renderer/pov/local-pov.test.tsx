import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { setTransport } from '../../../renderer/src/api';
import PovsPage from '../../../renderer/src/pages/povs-page';
import { usePovs } from '../../../renderer/src/state/pov';
import { useSettings } from '../../../renderer/src/state/settings';
import { useVms } from '../../../renderer/src/state/vms';
import { fakeManager, fakeManagerSkip, TOKEN, type FakeManager } from '../../pov/local-support';
import { povCore } from './pov-core';

/**
 * "Rehearse" through the POVs page against a real core whose vm connection is a remote
 * vm-manager: the daemon's real REST handler, VM service and metadata service, with the fake
 * launcher in place of QEMU (test/pov/local-support.ts). The same flow with real QEMU on this
 * laptop is the E2E test/e2e/rehearse.spec.ts.
 */
describe.skipIf(fakeManagerSkip)('a local POV on the POVs page', () => {
  let core: Core;
  let m: FakeManager;
  beforeEach(async () => {
    m = await fakeManager();
    const made = await povCore();
    core = made.core;
    setTransport(made.transport);
    await core.dispatcher.call('vm.setConnection', { mode: 'remote', url: m.url, token: TOKEN }, { transport: 'test' });
    usePovs.setState({ povs: null, error: null, actionError: null, detail: {} });
    useSettings.setState({ view: null, error: null });
    useVms.setState({ connection: null, vms: null, images: null });
    window.confirm = () => true;
  });
  afterEach(async () => {
    cleanup();
    await core.close();
    await m.close();
  });

  it(
    'one click rehearses from the bundled template; the row says Remote vm-manager; the detail shows its VM with console and ' +
      'attestation; destroy deletes it',
    async () => {
      render(<PovsPage />);
      fireEvent.click(await screen.findByRole('button', { name: 'Rehearse on the remote vm-manager' }));
      const open = await screen.findByRole('button', { name: /^Rehearsal / }, { timeout: 10_000 });
      const name = open.textContent!;
      const row = open.closest('[role="row"]') as HTMLElement;
      expect(within(row).getByTestId('pov-platform').textContent).toBe('Remote vm-manager');
      await waitFor(() => expect(within(row).getByText('POV Desk test VM')).toBeTruthy(), { timeout: 10_000 });
      await waitFor(() => expect(within(row).getByTestId('runstate').textContent).toBe('running'), { timeout: 20_000 });
      expect(await m.names()).toEqual([expect.stringMatching(/^povdesk-[0-9a-f]{8}-test-vm$/)]);

      fireEvent.click(open);
      await screen.findByRole('heading', { name });
      expect(screen.getByTestId('local-platform-notes').textContent).toMatch(/no scheduler/);
      // no auto-delete box and no share panel for a local POV
      expect(screen.queryByRole('button', { name: /Extend/ })).toBeNull();
      const vms = await screen.findByLabelText('Local VMs of this POV');
      const vmRow = await waitFor(() => {
        const r = vms.querySelector('tr[data-vm]');
        if (!r) throw new Error('no VM row yet');
        return r as HTMLElement;
      });
      expect(vmRow.getAttribute('data-vm')).toMatch(/^povdesk-[0-9a-f]{8}-test-vm$/);
      expect(vmRow.textContent).toContain('povdesk-test');
      await waitFor(() => expect(within(vmRow).getByTestId('vm-state').textContent).toBe('ready'));
      fireEvent.click(within(vmRow).getByRole('button', { name: vmRow.getAttribute('data-vm')! }));
      expect(await screen.findByTestId('vm-console')).toBeTruthy();
      fireEvent.click(screen.getByRole('tab', { name: 'Attestation' }));
      const att = await screen.findByLabelText('Attestation');
      await waitFor(() => expect(att.textContent).toContain('Attestation required'));
      // its address on the POV's own network
      expect(within(vmRow).getByTestId('vm-ip').textContent).toBe(' · 10.0.0.2');

      // the POV's switches: Internet access (off by default), Save clean state, then Reset becomes possible
      const inet = screen.getByRole('checkbox', { name: 'Internet access' }) as HTMLInputElement;
      expect(inet.checked).toBe(false);
      expect((screen.getByRole('button', { name: 'Reset to clean state' }) as HTMLButtonElement).disabled).toBe(true);
      fireEvent.click(inet);
      await waitFor(() => expect((screen.getByRole('checkbox', { name: 'Internet access' }) as HTMLInputElement).checked).toBe(true));
      fireEvent.click(screen.getByRole('button', { name: 'Save clean state' }));
      await waitFor(() => expect(screen.getByTestId('clean-snapshot-at').textContent).toMatch(/^clean state of /), { timeout: 20_000 });
      await waitFor(
        () => expect((screen.getByRole('button', { name: 'Reset to clean state' }) as HTMLButtonElement).disabled).toBe(false),
        {
          timeout: 20_000,
        },
      );
      fireEvent.click(screen.getByRole('button', { name: 'Reset to clean state' }));
      await waitFor(() => expect((screen.getByRole('button', { name: 'Save clean state' }) as HTMLButtonElement).disabled).toBe(false), {
        timeout: 20_000,
      });

      fireEvent.click(screen.getByRole('button', { name: '← POVs' }));
      await waitFor(() => expect((screen.getByRole('button', { name: `Destroy ${name}` }) as HTMLButtonElement).disabled).toBe(false), {
        timeout: 10_000,
      });
      fireEvent.click(screen.getByRole('button', { name: `Destroy ${name}` }));
      await waitFor(() => expect(screen.queryByRole('button', { name })).toBeNull(), { timeout: 20_000 });
      expect(await m.names()).toEqual([]);
    },
    60_000,
  );
});
