import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PovList } from '../../../renderer/src/components/pov/pov-list';
import type { PovView } from '../../../shared/contract/pov';
import { fakeRows } from './rows';
import { JOB_KIND } from '../../../shared/contract/job-kinds';

const NOW = Date.parse('2026-12-01T03:00:00Z');
afterEach(cleanup);

function withCn(p: PovView, cn: Partial<PovView['controlNode']>, over: Partial<PovView> = {}): PovView {
  return { ...p, ...over, controlNode: { ...p.controlNode, ...cn } };
}

function cell(name: string): HTMLElement {
  const row = screen.getByRole('button', { name }).closest('[role="row"]') as HTMLElement;
  return within(row).getByTestId('control-node');
}

describe('Control node column', () => {
  it('shows none with the reason and the Install button beside it; the VM with status and the SPIRE / Ed25519 label', () => {
    const [a, b, c, d, e] = fakeRows(5).map((p) => ({ ...p, runstate: 'running' }));
    const rows = [
      withCn(a!, { status: 'none', reason: '2 Linux VMs could be the control node (candidates: x, y)' }),
      withCn(b!, { status: 'enrolled', vmId: '9', vm: 'BtPocLin01', mode: 'spire' }),
      withCn(c!, { status: 'enrolled', vmId: '9', vm: 'control-node', mode: 'ed25519' }),
      withCn(d!, { status: 'failed', vmId: '9', vm: 'control-node', reason: 'the agent did not enrol before its code expired' }),
      withCn(e!, {
        status: 'not_set_up',
        vmId: '9',
        vm: 'BtPocLin01',
        reason: 'no control-plane URL is set; enter it in Settings → Control node, then press Install control node',
      }),
    ];
    const onCn = vi.fn();
    render(<PovList povs={rows} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} onControlNode={onCn} />);
    const none = cell('POV 0');
    expect(within(none).getByTestId('cn-vm').textContent).toBe('none');
    expect(within(none).getByTestId('cn-reason').textContent).toMatch(/candidates: x, y/);
    const install = within(none).getByRole('button', { name: 'Install control node for POV 0' }) as HTMLButtonElement;
    expect(install.disabled).toBe(false);
    fireEvent.click(install);
    expect(onCn).toHaveBeenLastCalledWith('install', expect.objectContaining({ id: 'p0' }));
    fireEvent.click(within(none).getByRole('button', { name: 'name VM for POV 0' }));
    expect(onCn).toHaveBeenLastCalledWith('name', expect.objectContaining({ id: 'p0' }));

    expect(within(cell('POV 1')).getByTestId('cn-vm').textContent).toBe('BtPocLin01');
    expect(within(cell('POV 1')).getByTestId('cn-status').textContent).toBe('enrolled');
    expect(within(cell('POV 1')).getByTestId('cn-mode').textContent).toBe('SPIRE');
    expect(within(cell('POV 1')).queryByRole('button', { name: /Install control node/ })).toBeNull();
    expect(within(cell('POV 2')).getByTestId('cn-mode').textContent).toBe('Ed25519');
    expect(within(cell('POV 3')).getByTestId('cn-status').textContent).toBe('failed');
    expect(within(cell('POV 3')).getByTestId('cn-reason').textContent).toMatch(/code expired/);
    expect(within(cell('POV 3')).getByRole('button', { name: 'Install control node for POV 3' })).toBeTruthy();
    // Settings lack what an install needs: said in words, with what to enter, and Install stays offered.
    expect(within(cell('POV 4')).getByTestId('cn-status').textContent).toBe('not set up');
    expect(within(cell('POV 4')).getByTestId('cn-reason').textContent).toMatch(/Settings → Control node/);
    expect(within(cell('POV 4')).getByRole('button', { name: 'Install control node for POV 4' })).toBeTruthy();
  });

  it('Install is greyed unless the environment is confirmed running; an install job shows its step instead of the reason', () => {
    const [a, b] = fakeRows(2);
    const rows = [
      withCn(a!, { status: 'none', reason: 'no Linux VM is available' }, { runstate: 'suspended' }),
      withCn(b!, { status: 'waiting', vmId: '9', vm: 'control-node', jobId: 'j9' }, { runstate: 'running' }),
    ];
    const job = {
      id: 'j9',
      kind: JOB_KIND.controlNodeInstall,
      title: 't',
      subject: 'p1',
      routine: false,
      state: 'running' as const,
      progress: { step: 'wait for enrolment', fraction: 0.5, message: '' },
      createdAt: '',
      startedAt: '',
      finishedAt: null,
      error: null,
      result: null,
    };
    render(<PovList povs={rows} jobs={{ j9: job }} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    expect((within(cell('POV 0')).getByRole('button', { name: 'Install control node for POV 0' }) as HTMLButtonElement).disabled).toBe(
      true,
    );
    expect(within(cell('POV 1')).getByTestId('cn-step').textContent).toBe('wait for enrolment…');
    expect(within(cell('POV 1')).queryByRole('button', { name: /Install control node/ })).toBeNull();
    expect(within(cell('POV 1')).getByTestId('cn-status').textContent).toBe('waiting');
  });

  it('a waiting status with no install job in this process still offers Install control node', () => {
    const [a] = fakeRows(1);
    render(
      <PovList
        povs={[withCn(a!, { status: 'waiting', vmId: '9', vm: 'control-node', jobId: null }, { runstate: 'running' })]}
        jobs={{}}
        now={NOW}
        onOpen={() => {}}
        onAction={() => {}}
      />,
    );
    expect((within(cell('POV 0')).getByRole('button', { name: 'Install control node for POV 0' }) as HTMLButtonElement).disabled).toBe(
      false,
    );
  });
});
