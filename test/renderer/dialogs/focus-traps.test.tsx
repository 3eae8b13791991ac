import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobRecord } from '../../../shared/contract';
import type { HostKeyPrompt } from '../../../shared/contract/ssh';
import type { VmImage, VmLearnedGolden } from '../../../shared/contract/vm';
import { HostKeyDialog } from '../../../renderer/src/components/terminal/host-key-dialog';
import { ImagesPanel } from '../../../renderer/src/components/vm/images-panel';
import { useTerminals } from '../../../renderer/src/state/terminals';
import { setTransport } from '../../../renderer/src/api';

afterEach(cleanup);

const active = () => document.activeElement as HTMLElement;

// ---- the SSH host-key dialog ----------------------------------------------------------------

const prompt = (kind: 'first' | 'changed'): HostKeyPrompt => ({
  promptId: `p-${kind}`,
  sessionId: 's1',
  host: '127.0.0.1',
  port: 2222,
  kind,
  keyType: 'ssh-ed25519',
  fingerprint: 'SHA256:abcdefabcdefabcdefabcdefabcdefabcdefabcdefa',
  stored: kind === 'changed' ? { keyType: 'ssh-ed25519', fingerprint: 'SHA256:old', addedAt: '2026-11-01T10:00:00Z' } : null,
  state: 'pending',
});

/** The Terminals page's shape: a Connect button; a prompt from main opens the dialog over it. */
function TerminalsHarness({ kind }: { kind: 'first' | 'changed' }) {
  const prompts = useTerminals((s) => s.prompts);
  return (
    <>
      <button onClick={() => useTerminals.setState({ prompts: [prompt(kind)] })}>Connect</button>
      <button>Elsewhere</button>
      {prompts[0] && <HostKeyDialog key={prompts[0].promptId} prompt={prompts[0]} />}
    </>
  );
}

/** Records the answers; like the store's own answer, it drops the prompt once main has it. */
function recordAnswers(): { accept: boolean; replace?: boolean }[] {
  const answers: { accept: boolean; replace?: boolean }[] = [];
  useTerminals.setState({
    prompts: [],
    answer: async (p, accept, replace) => {
      answers.push({ accept, ...(replace ? { replace } : {}) });
      useTerminals.setState((s) => ({ prompts: s.prompts.filter((q) => q.promptId !== p.promptId) }));
    },
  });
  return answers;
}

/** Each is a <dialog> opened by showModal() (Tab staying inside is Chromium's: test/e2e checks it). */
describe('SSH host-key dialog is modal', () => {
  it.each(['first', 'changed'] as const)(
    '%s key: a modal <dialog> with focus on the first answer; Escape refuses and closes, focus returns to Connect',
    async (kind) => {
      const answers = recordAnswers();
      render(<TerminalsHarness kind={kind} />);
      const opener = screen.getByRole('button', { name: 'Connect' });
      opener.focus();
      fireEvent.click(opener);
      const dialog = screen.getByRole('dialog');
      expect(dialog).toBeInstanceOf(HTMLDialogElement);
      expect((dialog as HTMLDialogElement).open).toBe(true);
      expect(dialog.contains(active())).toBe(true);
      const buttons = [...dialog.querySelectorAll('button')];
      // the first focused control is the first answer ("Refuse (recommended)" for a changed key)
      expect(active()).toBe(buttons[0]);
      if (kind === 'changed') expect(active().textContent).toBe('Refuse (recommended)');
      buttons[buttons.length - 1]!.focus();
      expect(answers).toEqual([]);

      await act(async () => {
        fireEvent.keyDown(active(), { key: 'Escape' });
      });
      expect(answers).toEqual([{ accept: false }]);
      expect(screen.queryByRole('dialog')).toBeNull();
      expect(active()).toBe(opener);
    },
  );
});

// ---- the golden-values dialog ---------------------------------------------------------------

const image: VmImage = {
  name: 'povdesk-test',
  kind: 'initramfs',
  createdAt: null,
  sizeBytes: null,
  goldenPcrs: 7,
  hasPolicy: true,
  firmwareChanged: null,
  goldenSizes: [],
  references: null,
  unpredictable: null,
};
const learned: VmLearnedGolden = {
  image: 'povdesk-test',
  cpus: 2,
  memoryMib: 2048,
  golden: { '0': 'a'.repeat(64), '9': 'b'.repeat(64) },
  pcrs: { '0': 'a'.repeat(64), '9': 'b'.repeat(64), '14': 'c'.repeat(64) },
  firmware: null,
  seconds: 23,
};
const learnJob = (state: JobRecord['state']): JobRecord => ({
  id: 'j1',
  kind: 'vm.learnGolden',
  title: 'Learn golden values of povdesk-test at 2 CPUs, 2048 MiB',
  subject: 'vm:image:povdesk-test',
  routine: false,
  state,
  progress: { step: state, fraction: null, message: '' },
  createdAt: '2026-12-01T10:00:00Z',
  startedAt: '2026-12-01T10:00:00Z',
  finishedAt: state === 'succeeded' ? '2026-12-01T10:00:23Z' : null,
  error: null,
  result: state === 'succeeded' ? learned : null,
});

describe('golden-values dialog is modal', () => {
  it('opens on its own when the learn job ends as a modal <dialog>; Escape discards, focus returns to the Learn button', () => {
    const panel = (jobs: JobRecord[]) => <ImagesPanel images={[image]} jobs={jobs} onStarted={() => undefined} onSaved={() => undefined} />;
    const { rerender } = render(panel([]));
    const learn = screen.getByRole('button', { name: 'Learn golden values' });
    learn.focus();
    rerender(panel([learnJob('running')]));
    // focus wanders while the boot runs (the user reads another panel)
    (document.activeElement as HTMLElement).blur();
    rerender(panel([learnJob('succeeded')]));

    const dialog = screen.getByRole('dialog', { name: 'Golden values of povdesk-test' });
    expect((dialog as HTMLDialogElement).open).toBe(true);
    expect(active().textContent).toBe('Save golden values');
    screen.getByRole('button', { name: 'Discard' }).focus();

    fireEvent.keyDown(active(), { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(active()).toBe(screen.getByRole('button', { name: 'Learn golden values' }));
  });
});

describe('golden values at another size', () => {
  it('a learn boot runs at the size chosen above the list; the dialog names it and Save sends it back', async () => {
    const calls: [string, unknown][] = [];
    setTransport({
      transport: 'ws',
      call: async (m, a) => (calls.push([m, a]), m === 'vm.learnGolden' ? { jobId: 'j1' } : { image }),
      subscribe: () => () => undefined,
      ack: () => undefined,
    });
    const at1024: VmLearnedGolden = { ...learned, memoryMib: 1024 };
    const job: JobRecord = { ...learnJob('succeeded'), title: 'Learn golden values of povdesk-test at 2 CPUs, 1024 MiB', result: at1024 };
    const panel = (jobs: JobRecord[]) => (
      <ImagesPanel
        images={[{ ...image, goldenSizes: [{ cpus: 1, memoryMib: 2048 }] }]}
        jobs={jobs}
        onStarted={() => undefined}
        onSaved={() => undefined}
      />
    );
    const { rerender } = render(panel([]));
    expect(screen.getByText(/7 golden PCR values at 2 CPUs, 2048 MiB; also learned at 1 CPU, 2048 MiB/)).toBeTruthy();
    fireEvent.change(screen.getByLabelText('Learn boot memory (MiB)'), { target: { value: '1024' } });
    fireEvent.click(screen.getByRole('button', { name: 'Learn golden values' }));
    await waitFor(() => expect(calls).toEqual([['vm.learnGolden', { image: 'povdesk-test', cpus: 2, memoryMib: 1024 }]]));
    rerender(panel([job]));
    const dialog = screen.getByRole('dialog', { name: 'Golden values of povdesk-test' });
    expect(dialog.textContent).toContain('One boot of povdesk-test at 2 CPUs, 1024 MiB (23 s)');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Save golden values' }));
    await waitFor(() =>
      expect(calls[1]).toEqual([
        'vm.saveGolden',
        { image: 'povdesk-test', golden: learned.golden, firmware: null, cpus: 2, memoryMib: 1024 },
      ]),
    );
    setTransport(null);
  });
});
