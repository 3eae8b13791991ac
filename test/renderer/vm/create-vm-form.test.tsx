import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { VmImage } from '../../../shared/contract/vm';
import { CreateVmForm } from '../../../renderer/src/components/vm/create-vm-form';

/**
 * The Create VM form warns before an attested VM is made at a size its image's golden values do
 * not hold for (it would wait in attesting with a golden mismatch): only while attestation is on
 * and the image has golden values, and the warning goes when the size is put back.
 */
const image = (name: string, goldenPcrs: number): VmImage => ({
  name,
  kind: 'kernel',
  createdAt: null,
  sizeBytes: null,
  goldenPcrs,
  hasPolicy: true,
  firmwareChanged: null,
  goldenSizes: [],
  references: null,
  unpredictable: null,
});

afterEach(cleanup);

describe('Create VM form: attested VM size', () => {
  it('another memory size or CPU count with attestation on warns, naming the learn size', () => {
    render(<CreateVmForm images={[image('povdesk-test', 7), image('no-golden', 0)]} onStarted={() => undefined} />);
    const form = screen.getByRole('form', { name: 'Create VM' });
    const attest = within(form).getByRole('checkbox', { name: /Require attestation/ }) as HTMLInputElement;
    expect(attest.checked).toBe(true); // golden values: attestation on by default
    expect(within(form).queryByText(/PCRs move with the VM's size/)).toBeNull();

    fireEvent.change(within(form).getByLabelText(/Memory/), { target: { value: '4096' } });
    expect(within(form).getByText(/PCRs move with the VM's size/).textContent).toBe(
      "Image povdesk-test: golden values were learned at 2 CPUs and 2048 MiB, and the PCRs move with the VM's size: " +
        'at 2 CPUs and 4096 MiB ' +
        'the quotes will not match and the VM will wait in attesting. Learn golden values at 2 CPUs and 4096 MiB (Local VMs, Images), ' +
        'create it at 2 CPUs and 2048 MiB, or create it without attestation.',
    );
    fireEvent.change(within(form).getByLabelText(/Memory/), { target: { value: '2048' } });
    fireEvent.change(within(form).getByLabelText(/CPUs/), { target: { value: '4' } });
    expect(within(form).getByText(/at 4 CPUs and 2048 MiB the quotes will not match/)).toBeTruthy();

    fireEvent.click(attest); // without attestation the size does not matter
    expect(within(form).queryByText(/PCRs move with the VM's size/)).toBeNull();
    fireEvent.click(attest);
    fireEvent.change(within(form).getByRole('combobox'), { target: { value: 'no-golden' } });
    expect(attest.checked).toBe(false); // no golden values: attestation off by default
    fireEvent.click(attest);
    expect(within(form).getByText(/has no golden PCR values yet/)).toBeTruthy(); // that image's own warning
    expect(within(form).queryByText(/PCRs move with the VM's size/)).toBeNull();
  });

  it('a size the image has golden values for (golden_sizes) does not warn; other sizes list it among the learned ones', () => {
    const learned: VmImage = { ...image('povdesk-test', 7), goldenSizes: [{ cpus: 2, memoryMib: 4096 }] };
    render(<CreateVmForm images={[learned]} onStarted={() => undefined} />);
    const form = screen.getByRole('form', { name: 'Create VM' });
    fireEvent.change(within(form).getByLabelText(/Memory/), { target: { value: '4096' } });
    expect(within(form).queryByText(/PCRs move with the VM's size/)).toBeNull();
    fireEvent.change(within(form).getByLabelText(/CPUs/), { target: { value: '4' } });
    expect(within(form).getByText(/PCRs move with the VM's size/).textContent).toContain(
      "golden values were learned at 2 CPUs and 2048 MiB, 2 CPUs and 4096 MiB, and the PCRs move with the VM's size: " +
        'at 4 CPUs and 4096 MiB',
    );
  });

  it('an image with reference measurements: attestation on by default, and no size warns', () => {
    const refs: VmImage = { ...image('povdesk-test', 0), references: 'made 2026-12-06 02:30 from the files: kernel 1a7ac0c40b10…' };
    render(<CreateVmForm images={[refs]} onStarted={() => undefined} />);
    const form = screen.getByRole('form', { name: 'Create VM' });
    expect((within(form).getByRole('checkbox', { name: /Require attestation/ }) as HTMLInputElement).checked).toBe(true);
    for (const [cpus, mib] of [
      ['1', '256'],
      ['2', '4096'],
      ['8', '16384'],
    ]) {
      fireEvent.change(within(form).getByLabelText(/CPUs/), { target: { value: cpus } });
      fireEvent.change(within(form).getByLabelText(/Memory/), { target: { value: mib } });
      expect(within(form).queryByText(/PCRs move with the VM's size/)).toBeNull();
      expect(within(form).queryByText(/has no golden PCR values yet/)).toBeNull();
    }
  });
});
