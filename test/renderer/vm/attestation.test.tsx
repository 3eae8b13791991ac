import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { VmAttestation, VmImage } from '../../../shared/contract/vm';
import { setTransport } from '../../../renderer/src/api';
import { AttestationPanel } from '../../../renderer/src/components/vm/attestation-panel';
import { ImagesPanel } from '../../../renderer/src/components/vm/images-panel';

/**
 * What the UI shows of reference measurements: the Attestation tab names the event that did not
 * pass (its type, PCR, what it measures, expected and seen) and counts the events checked and
 * allowed; the Images panel shows an image's references, offers to make them again after a
 * firmware change, and keeps "Learn golden values" for an image without references, saying why.
 */
const H = (c: string) => c.repeat(64);
const stage = (
  verified: boolean,
  mismatch: NonNullable<VmAttestation['stages'][number]['events']>['mismatch'],
): VmAttestation['stages'][number] => ({
  stage: 'initrd',
  verified,
  at: null,
  failed: verified ? null : 'event',
  message: verified
    ? 'initrd quote verified; event log replayed (26 events: 22 checked against the references, 3 allowed by type)'
    : "event 11 (EV_EFI_BOOT_SERVICES_APPLICATION, PCR 4) does not match the image's reference measurements",
  pcrs: [{ index: 4, value: H('b'), golden: H('b'), match: true, note: 'replayed from the event log' }],
  events: { count: 26, checked: 22, allowed: 3, mismatch },
});
const attestation = (s: VmAttestation['stages'][number]): VmAttestation => ({
  id: 'deadbeef',
  required: true,
  userDataReleased: s.verified,
  akFingerprint: H('a'),
  nonceIssuedAt: null,
  policyKnown: true,
  stages: [s],
});
const image = (o: Partial<VmImage>): VmImage => ({
  name: 'povdesk-test',
  kind: 'kernel',
  createdAt: null,
  sizeBytes: null,
  goldenPcrs: 0,
  hasPolicy: true,
  firmwareChanged: null,
  goldenSizes: [],
  references: null,
  unpredictable: null,
  ...o,
});

afterEach(cleanup);

describe('reference measurements in the UI', () => {
  it('the Attestation tab names the mismatched event: type, PCR, what, expected, seen', async () => {
    const mismatch = {
      event: 11,
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      pcr: 4,
      expected: `${H('c')} (the kernel vmlinuz as QEMU loads it at 256 MiB)`,
      seen: H('d'),
      what: 'an EFI application (a boot loader or a kernel) the references do not list',
    };
    setTransport({
      transport: 'ws',
      call: async () => attestation(stage(false, mismatch)),
      subscribe: () => () => undefined,
      ack: () => undefined,
    });
    render(<AttestationPanel id="deadbeef" version="1" />);
    const dl = await screen.findByLabelText('Mismatched event, stage initrd');
    expect(within(dl).getByText('#11 EV_EFI_BOOT_SERVICES_APPLICATION, PCR 4')).toBeTruthy();
    expect(within(dl).getByText(mismatch.what)).toBeTruthy();
    expect(within(dl).getByText(mismatch.expected)).toBeTruthy();
    expect(within(dl).getByText(H('d'))).toBeTruthy();
    expect(screen.getByLabelText('Event log, stage initrd').textContent).toBe(
      "Event log: 26 events, 22 checked against the image's reference measurements, 3 allowed by type",
    );
    expect(screen.getByRole('columnheader', { name: 'Expected' })).toBeTruthy(); // the PCR table's column: the log's replay here
  });

  it('a verified stage says all events match, and shows no mismatch', async () => {
    setTransport({
      transport: 'ws',
      call: async () => attestation(stage(true, null)),
      subscribe: () => () => undefined,
      ack: () => undefined,
    });
    render(<AttestationPanel id="deadbeef" version="1" />);
    expect((await screen.findByLabelText('Event log, stage initrd')).textContent).toMatch(/· all match$/);
    expect(screen.queryByLabelText('Mismatched event, stage initrd')).toBeNull();
  });

  it('the Images panel: references with "Make references again" after a firmware change; the golden fallback says why', async () => {
    const calls: [string, unknown][] = [];
    setTransport({
      transport: 'ws',
      call: async (m, a) => (calls.push([m, a]), { image: image({}) }),
      subscribe: () => () => undefined,
      ack: () => undefined,
    });
    let saved = 0;
    render(
      <ImagesPanel
        images={[
          image({
            references: 'made 2026-12-06 02:30 from the files: kernel 1a7ac0c40b10…',
            firmwareChanged: "the host's firmware changed since the reference measurements were made",
          }),
          image({ name: 'legacy', unpredictable: 'its GRUB has no tpm module built in' }),
        ]}
        jobs={[]}
        onStarted={() => undefined}
        onSaved={() => saved++}
      />,
    );
    expect(screen.getByText(/^reference measurements \(attested VMs of any size\): made 2026-12-06/)).toBeTruthy();
    expect(screen.getAllByRole('button', { name: /Learn golden values/ })).toHaveLength(1); // only the fallback image
    expect(screen.getByText('no reference measurements: its GRUB has no tpm module built in')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Make references again' }));
    await waitFor(() => expect(saved).toBe(1));
    expect(calls).toEqual([['vm.remakeReferences', { image: 'povdesk-test' }]]);
  });
});
