import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopManager } from '../../support/manager';
import type { Core } from '../../../main/core/create';
import { setTransport } from '../../../renderer/src/api';
import LocalVmsPage from '../../../renderer/src/pages/local-vms-page';
import { testCore } from '../../foundation/helpers';
import { vmSkip } from '../../vm/helpers';
import { coreTransport } from '../core-transport';

const skip = vmSkip();

/** The Local VMs page against a real core, the real vm-manager process and real QEMU under TCG. */
describe.skipIf(skip !== null)('Local VMs page', () => {
  let core: Core;
  beforeAll(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    const home = core.base.home;
    await core.close();
    await stopManager(home);
  });

  it('shows the host report with the accelerator and, with /dev/kvm unusable, the TCG warning; honest empty states', async () => {
    render(<LocalVmsPage />);
    expect(screen.getByText(/Starting the local vm-manager/)).toBeTruthy();
    const accel = await screen.findByTestId('vm-accel', {}, { timeout: 30_000 });
    expect(['kvm', 'tcg']).toContain(accel.textContent);
    if (accel.textContent === 'tcg' && existsSync('/dev/kvm')) {
      expect(screen.getByRole('alert').textContent).toMatch(/Warning: no hardware acceleration.*kvm/);
    }
    expect(await screen.findByText('No images yet', {}, { timeout: 10_000 })).toBeTruthy();
    expect(screen.getByText('No VMs')).toBeTruthy();
  }, 60_000);

  it('builds the test image, refuses a bad name, creates a VM whose console follows live, and cancel deletes it', async () => {
    fireEvent.click(screen.getByRole('button', { name: 'Build the test image' }));
    // The build makes the image's reference measurements from its files (no boot), so a fresh install attests at any size.
    await screen.findByText(
      /^reference measurements \(attested VMs of any size\): made .* from the files: kernel/,
      {},
      { timeout: 120_000 },
    );
    const form = await screen.findByRole('form', { name: 'Create VM' }, { timeout: 30_000 });
    const name = within(form).getByPlaceholderText('demo-1');
    fireEvent.change(name, { target: { value: 'Bad_Name' } });
    expect(within(form).getByText(/lower-case letters, digits/)).toBeTruthy();
    fireEvent.click(within(form).getByRole('button', { name: 'Create' }));
    expect(within(form).getByRole('alert').textContent).toMatch(/^Name:/);
    // references made by the build: attestation is on by default, with no size warning; this VM is made without it
    const attest = within(form).getByRole('checkbox', { name: /Require attestation/ }) as HTMLInputElement;
    expect(attest.checked).toBe(true);
    expect(within(form).queryByText(/has no golden PCR values yet/)).toBeNull();
    fireEvent.change(within(form).getByRole('spinbutton', { name: /Memory/ }), { target: { value: '256' } });
    expect(within(form).queryByText(/the PCRs move with the VM's size/)).toBeNull();
    fireEvent.click(attest);
    expect(attest.checked).toBe(false);

    fireEvent.change(name, { target: { value: 'ui-one' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Create' }));
    const job = await screen.findByText('Create VM ui-one', {}, { timeout: 10_000 });
    expect(job).toBeTruthy();
    const row = await waitFor(
      () => {
        const r = document.querySelector('tr[data-vm="ui-one"]');
        if (!r || !/booting|attesting/.test(r.textContent ?? '')) throw new Error('no booting row yet');
        return r as HTMLElement;
      },
      { timeout: 30_000 },
    );
    // state gates the actions: a booting VM can be stopped, not started
    expect((within(row).getByRole('button', { name: 'Start' }) as HTMLButtonElement).disabled).toBe(true);
    expect((within(row).getByRole('button', { name: 'Stop' }) as HTMLButtonElement).disabled).toBe(false);
    fireEvent.click(within(row).getByRole('button', { name: 'ui-one' }));
    const term = await screen.findByTestId('vm-console');
    // the console grows while the VM boots: bytes written into xterm and acknowledged
    await waitFor(() => expect(Number(term.getAttribute('data-bytes'))).toBeGreaterThan(0), { timeout: 30_000 });

    await act(async () => {
      fireEvent.click(within(job.closest('li') as HTMLElement).getByRole('button', { name: 'Cancel' }));
    });
    await waitFor(() => expect(document.querySelector('tr[data-vm="ui-one"]')).toBeNull(), { timeout: 30_000 });
    await waitFor(() => expect(screen.getByText(/the half-made VM ui-one .* was deleted/)).toBeTruthy(), { timeout: 10_000 });
    expect(screen.getByText('No VMs')).toBeTruthy();
  }, 400_000);
});
