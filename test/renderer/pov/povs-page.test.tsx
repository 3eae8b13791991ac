import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import PovsPage from '../../../renderer/src/pages/povs-page';
import SkytapTestConnection from '../../../renderer/src/pages/settings/skytap-test-connection';
import { usePovs } from '../../../renderer/src/state/pov';
import type { Emulator } from '../../skytap-emulator/emulator';
import { povPageWorld } from './pov-core';

let core: Core;
let emu: Emulator;

beforeEach(async () => {
  ({ core, emu } = await povPageWorld());
});
afterEach(async () => {
  cleanup();
  await core.close();
  await emu.close();
});

async function saveSettings() {
  await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
}

function row(name: string): HTMLElement {
  return screen.getByRole('button', { name }).closest('[role="row"]') as HTMLElement;
}

describe('POVs page', () => {
  it('creates from a searched template, then suspends, starts and destroys', async () => {
    await saveSettings();
    render(<PovsPage />);
    expect(await screen.findByText('No POVs yet')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'New POV' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create POV' });
    await within(dialog).findByRole('option', { name: /Windows AD lab/ });
    fireEvent.change(within(dialog).getByLabelText('Search templates'), { target: { value: 'odd' } });
    expect(within(dialog).getAllByRole('option')).toHaveLength(1);
    fireEvent.change(within(dialog).getByLabelText('Search templates'), { target: { value: 'windows ad' } });
    fireEvent.click(within(dialog).getByRole('option', { name: /Windows AD lab/ }));
    fireEvent.change(within(dialog).getByLabelText('POV name'), { target: { value: 'Globex eval' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    await waitFor(() => expect(within(row('Globex eval')).getByTestId('runstate').textContent).toBe('running'), { timeout: 10_000 });
    expect(within(row('Globex eval')).getByText('Windows AD lab')).toBeTruthy();
    expect(within(row('Globex eval')).getByText('confirmed just now')).toBeTruthy();

    // rows follow the job live: Skytap's runstate shows before the create job has let go of the row
    await waitFor(() => expect((screen.getByRole('button', { name: 'Suspend Globex eval' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: 'Suspend Globex eval' }));
    await waitFor(() => expect(within(row('Globex eval')).getByTestId('runstate').textContent).toBe('suspended'), { timeout: 10_000 });
    await waitFor(() => expect((screen.getByRole('button', { name: 'Start Globex eval' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: 'Start Globex eval' }));
    await waitFor(() => expect(within(row('Globex eval')).getByTestId('runstate').textContent).toBe('running'), { timeout: 10_000 });
    await waitFor(() => expect((screen.getByRole('button', { name: 'Destroy Globex eval' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: 'Destroy Globex eval' }));
    await waitFor(() => expect(screen.queryByRole('button', { name: 'Globex eval' })).toBeNull(), { timeout: 10_000 });
    expect(emu.state.environmentIds()).toEqual([]);
  }, 40_000);

  it('opens the detail, shows VMs with inferred OS, and keeps an OS override', async () => {
    await saveSettings();
    const { jobId } = await (
      await import('../../../renderer/src/api')
    ).api.call('pov.create', { templateId: [...emu.state.templates.keys()][2]!, name: 'Odd' });
    await core.base.jobs.wait(jobId);
    render(<PovsPage />);
    fireEvent.click(await screen.findByRole('button', { name: 'Odd' }));
    const table = await screen.findByRole('table', { name: 'VMs' });
    const sel = within(table).getByLabelText('OS of mystery') as HTMLSelectElement;
    expect(sel.value).toBe('');
    const firstOption = (vm: string) => (within(table).getByLabelText(`OS of ${vm}`) as HTMLSelectElement).options[0]!.textContent;
    expect(firstOption('centos')).toBe('Skytap says: linux');
    expect(firstOption('solaris')).toBe('Skytap says: unknown');
    expect(firstOption('mystery')).toBe('Skytap says: unknown');
    await act(async () => {
      fireEvent.change(sel, { target: { value: 'linux' } });
    });
    await waitFor(() => expect((within(table).getByLabelText('OS of mystery') as HTMLSelectElement).value).toBe('linux'));
    fireEvent.click(screen.getByRole('button', { name: 'Refresh VMs' }));
    await waitFor(async () => {
      const { vms } = await (await import('../../../renderer/src/api')).api.call('pov.get', { id: usePovs.getState().povs![0]!.id });
      expect(vms.find((v) => v.name === 'mystery')!.osOverride).toBe('linux');
    });
  }, 30_000);
});

describe('Test connection', () => {
  const form = (over: Partial<{ username: string; apiToken: string; url: string; projectId: string }> = {}) => ({
    username: '',
    apiToken: '',
    url: '',
    projectId: '',
    ...over,
  });

  it('with an empty form and nothing saved says what to fill in, once', async () => {
    render(<SkytapTestConnection form={form()} />);
    fireEvent.click(screen.getByRole('button', { name: 'Test connection' }));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/Enter the Skytap username and API token above to test/);
    expect(alert.textContent).toMatch(/invalid request/);
    expect(document.body.textContent!.match(/API security token/g)).toHaveLength(1);
  });

  it('tests a filled-in form that was never saved', async () => {
    render(<SkytapTestConnection form={form({ username: 'demo', apiToken: 'demo-token', url: emu.url })} />);
    fireEvent.click(screen.getByRole('button', { name: 'Test connection' }));
    const ok = await screen.findByRole('status');
    expect(ok.getAttribute('data-outcome')).toBe('ok');
    expect(ok.getAttribute('data-run')).toBe('1');
    expect((await core.base.settings.view(core.base.paths)).skytap.tokenSet).toBe(false);
  });

  it('shows ok with the count, and a wrong token typed in the form as unauthorized with its remedy', async () => {
    await saveSettings();
    const { rerender } = render(<SkytapTestConnection form={form({ username: 'demo', url: emu.url })} />);
    fireEvent.click(screen.getByRole('button', { name: 'Test connection' }));
    const ok = await screen.findByRole('status');
    expect(ok.getAttribute('data-outcome')).toBe('ok');
    expect(ok.textContent).toMatch(/3 templates visible/);
    rerender(<SkytapTestConnection form={form({ username: 'demo', url: emu.url, apiToken: 'the-password' })} />);
    fireEvent.click(screen.getByRole('button', { name: 'Test connection' }));
    await waitFor(() => expect(screen.getByRole('status').getAttribute('data-outcome')).toBe('unauthorized'));
    expect(screen.getByRole('status').getAttribute('data-run')).toBe('2');
    expect(screen.getByRole('status').textContent).toMatch(/API security token/);
  });
});
