import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { povActionsFor } from '../../../shared/contract/pov';
import { PovList } from '../../../renderer/src/components/pov/pov-list';
import { confirmedText } from '../../../renderer/src/components/pov/time';
import { fakeRows } from './rows';
import { JOB_KIND } from '../../../shared/contract/job-kinds';

const NOW = Date.parse('2026-12-01T03:00:00Z');

export { fakeRows };

afterEach(cleanup);

describe('PovList', () => {
  it('renders only the rows in view for 2,000 POVs', () => {
    render(<PovList povs={fakeRows(2000)} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    const rows = screen.getAllByRole('row');
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.length).toBeLessThan(40); // header + a viewport's worth + overscan, not 2,001
    expect(screen.getByRole('table').getAttribute('aria-rowcount')).toBe('2001');
  });

  it('shows the confirmed age, never a live claim, the badges and the control node column', () => {
    render(<PovList povs={fakeRows(3)} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    expect(screen.getAllByText('confirmed 4 min ago')).toHaveLength(3);
    expect(screen.getAllByText('rate limited')).toHaveLength(1);
    expect(screen.getByText('installed')).toBeTruthy();
    expect(screen.getAllByText('—')).toHaveLength(3);
  });

  it('gates actions on the confirmed state', () => {
    const onAction = vi.fn();
    render(<PovList povs={fakeRows(2)} jobs={{}} now={NOW} onOpen={() => {}} onAction={onAction} />);
    const start0 = screen.getByRole('button', { name: 'Start POV 0' }) as HTMLButtonElement;
    const suspend0 = screen.getByRole('button', { name: 'Suspend POV 0' }) as HTMLButtonElement;
    expect(start0.disabled).toBe(false); // suspended → can start
    expect(suspend0.disabled).toBe(true);
    expect((screen.getByRole('button', { name: 'Start POV 1' }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(start0);
    expect(onAction).toHaveBeenCalledWith('pov.start', expect.objectContaining({ id: 'p0' }));
  });

  it("shows a running job's progress inline", () => {
    const rows = fakeRows(1).map((r) => ({
      ...r,
      activeJobId: 'j1',
      actions: povActionsFor({ state: 'active', runstate: 'running', envId: '1', busy: true }),
    }));
    const job = {
      id: 'j1',
      kind: JOB_KIND.povSuspend,
      title: 't',
      subject: 'p0',
      routine: false,
      state: 'running' as const,
      progress: { step: 'wait until suspended', fraction: 0.5, message: '' },
      createdAt: '',
      startedAt: '',
      finishedAt: null,
      error: null,
      result: null,
    };
    render(<PovList povs={rows} jobs={{ j1: job }} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('50');
    expect(screen.getByText('wait until suspended')).toBeTruthy();
    expect((screen.getByRole('button', { name: 'Destroy POV 0' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('shows why the last operation on a row failed', () => {
    const failed = {
      id: 'j2',
      kind: JOB_KIND.povStart,
      title: 'Start POV "POV 0"',
      subject: 'p0',
      routine: false,
      state: 'failed' as const,
      progress: { step: '', fraction: null, message: '' },
      createdAt: '',
      startedAt: '',
      finishedAt: '',
      error: { code: 'rate_limited' as const, message: 'Skytap rate limited this request' },
      result: null,
    };
    render(<PovList povs={fakeRows(1)} jobs={{}} lastJobs={{ p0: failed }} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    expect(screen.getByText(/Start POV "POV 0" failed: Skytap rate limited this request/)).toBeTruthy();
  });

  it('words ages plainly', () => {
    expect(confirmedText(null, NOW)).toBe('never confirmed');
    expect(confirmedText(new Date(NOW - 10_000).toISOString(), NOW)).toBe('confirmed just now');
    expect(confirmedText(new Date(NOW - 3 * 3600_000).toISOString(), NOW)).toBe('confirmed 3 h ago');
    expect(confirmedText(new Date(NOW - 5 * 86400_000).toISOString(), NOW)).toBe('confirmed 5 d ago');
  });
});
