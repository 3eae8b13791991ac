import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PovList } from '../../../renderer/src/components/pov/pov-list';
import { ReadinessChecklist } from '../../../renderer/src/components/pov/readiness';
import { setTransport } from '../../../renderer/src/api';
import { assessReadiness } from '../../../main/services/pov/readiness';
import type { PovView } from '../../../shared/contract/pov';
import { povReadiness } from '../../../shared/contract/readiness';
import { arrange, DEFAULT_ARRANGEMENT, type Arrangement } from '../../../renderer/src/components/pov/arrange';
import { ListControls } from '../../../renderer/src/components/pov/list-controls';
import { fakeRows } from './rows';

const NOW = Date.parse('2026-12-01T03:00:00Z');
const LONG = 'no control node: 2 Linux VMs could be the control node (candidates: web-frontend-01, db-primary-02); name one with "name VM"';
afterEach(() => {
  cleanup();
  setTransport(null);
});

function rowOf(name: string): HTMLElement {
  return screen.getByRole('button', { name }).closest('[role="row"]') as HTMLElement;
}

describe('POV list: readiness, times and full reasons', () => {
  it('shows the badge in words with the reason on hover, the auto-delete countdown and share expiry', () => {
    const [a, b] = fakeRows(2);
    const rows: PovView[] = [
      {
        ...a!,
        autoDelete: {
          at: new Date(NOW + 50 * 3600_000).toISOString(),
          status: 'armed',
          reason: null,
          scheduleId: 's',
          nextWarning: null,
          lastWarning: null,
        },
        readiness: { overall: 'not_ready', summary: LONG, shareExpiresAt: new Date(NOW + 26 * 3600_000).toISOString() },
      },
      { ...b!, readiness: { overall: 'ready', summary: 'Ready for the customer.', shareExpiresAt: null } },
    ];
    render(<PovList povs={rows} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    const badge = within(rowOf('POV 0')).getByTestId('readiness');
    expect(badge.textContent).toBe('not ready');
    expect(badge.getAttribute('title')).toBe(LONG);
    expect(within(rowOf('POV 0')).getByTestId('pov-times').textContent).toBe('deletes in 2 d 2 hlink expires in 26 h 0 min');
    expect(within(rowOf('POV 1')).getByTestId('readiness').textContent).toBe('ready');
    expect(within(rowOf('POV 1')).getByTestId('pov-times').textContent).toBe('no auto-deleteno share link');
  });

  it('expands a row to show every reason in full, and collapses it again', () => {
    const [a] = fakeRows(1);
    const row: PovView = {
      ...a!,
      controlNode: { ...a!.controlNode, status: 'none', reason: LONG },
      readiness: { overall: 'not_ready', summary: LONG, shareExpiresAt: null },
    };
    render(<PovList povs={[row]} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} />);
    // the cell shortens the reason, but says it in full on hover
    expect(within(rowOf('POV 0')).getByTestId('cn-reason').getAttribute('title')).toBe(LONG);
    expect(screen.queryByTestId('pov-details')).toBeNull();
    const toggle = screen.getByRole('button', { name: 'Show details for POV 0' });
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    fireEvent.click(toggle);
    const details = screen.getByTestId('pov-details');
    expect(details.textContent).toContain(`Control node` + `none: ${LONG}`);
    expect(details.textContent).toContain('no live share link');
    fireEvent.click(screen.getByRole('button', { name: 'Hide details for POV 0' }));
    expect(screen.queryByTestId('pov-details')).toBeNull();
  });

  it('the Actions menu offers the same actions, greyed alike, and closes on Escape', () => {
    const [a] = fakeRows(1); // suspended: Start allowed, Suspend not
    const onAction = vi.fn();
    render(<PovList povs={[a!]} jobs={{}} now={NOW} onOpen={() => {}} onAction={onAction} />);
    fireEvent.click(screen.getByRole('button', { name: 'Actions for POV 0' }));
    const menu = screen.getByRole('menu');
    expect((within(menu).getByRole('menuitem', { name: 'Suspend' }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.keyDown(menu, { key: 'Escape' });
    expect(screen.queryByRole('menu')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Actions for POV 0' }));
    fireEvent.click(within(screen.getByRole('menu')).getByRole('menuitem', { name: 'Start' }));
    expect(onAction).toHaveBeenCalledWith('pov.start', expect.objectContaining({ id: 'p0' }));
    expect(screen.queryByRole('menu')).toBeNull();
  });
});

describe('POV page: readiness checklist', () => {
  it('lists each item with its state in words, its age and the fix, from pov.readiness', async () => {
    const [a] = fakeRows(1);
    const result = povReadiness.parse(assessReadiness({ pov: a!, pam: null, shares: [], jobs: [] }, new Date(NOW)));
    const calls: unknown[] = [];
    setTransport({
      transport: 'ws',
      call: async (method, args) => {
        calls.push([method, args]);
        return result;
      },
      subscribe: () => () => {},
      ack: () => {},
    });
    const opened: string[] = [];
    const fixes = {
      'share.create': () => opened.push('share'),
      'pam.saveTenants': () => opened.push('access'),
      'pov.start': () => opened.push('start'),
    };
    render(<ReadinessChecklist povId="p0" platform="skytap" fixes={fixes} />);
    await waitFor(() => expect(screen.getByTestId('readiness-checklist')).toBeTruthy());
    expect(calls).toEqual([['pov.readiness', { id: 'p0' }]]);
    expect(screen.getByTestId('readiness-overall').textContent).toBe('not ready');
    const env = screen.getByTestId('readiness-checklist').querySelector('[data-item="environment"]')!;
    expect(env.textContent).toContain('not ready');
    expect(env.textContent).toContain('Start the environment');
    expect(env.textContent).toContain('as of 4 min ago');
    const share = screen.getByTestId('readiness-checklist').querySelector('[data-item="share"]')!;
    expect(share.textContent).toContain('Create a share link');
    // every Fix is a link that opens the place it names (the handler the page gives for its method)
    fireEvent.click(within(share as HTMLElement).getByRole('button', { name: 'Create a share link' }));
    fireEvent.click(within(env as HTMLElement).getByRole('button', { name: 'Start the environment' }));
    // no BeyondTrust tenant: neutral "not configured", with how to add it (no "Fix:")
    const gateway = screen.getByTestId('readiness-checklist').querySelector('[data-item="gateway"]')! as HTMLElement;
    expect(gateway.querySelector('.badge')!.textContent).toBe('not configured');
    expect(gateway.querySelector('.badge')!.classList.contains('bad')).toBe(false);
    expect(gateway.textContent).not.toContain('Fix:');
    fireEvent.click(within(gateway).getByRole('button', { name: /Access \(BeyondTrust\)/ }));
    expect(opened).toEqual(['share', 'start', 'access']);
  });

  it('a healthy local POV reads "ready to rehearse", naming what is not configured', async () => {
    const [a] = fakeRows(1);
    const local = {
      ...a!,
      platform: 'local',
      state: 'active' as const,
      runstate: 'running' as const,
      envId: 'e',
      lastConfirmedAt: new Date(NOW - 60_000).toISOString(),
      controlNode: { ...a!.controlNode, status: 'not_set_up' as const, reason: 'Settings → Control node is incomplete' },
    };
    const result = povReadiness.parse(assessReadiness({ pov: local, pam: null, shares: [], jobs: [] }, new Date(NOW)));
    setTransport({ transport: 'ws', call: async () => result, subscribe: () => () => {}, ack: () => {} });
    render(<ReadinessChecklist povId="p0" platform="local" />);
    await waitFor(() => expect(screen.getByTestId('readiness-overall').textContent).toBe('ready to rehearse'));
    expect(screen.getByTestId('readiness-checklist').textContent).toContain(
      'Ready to rehearse (not configured: control node, BeyondTrust).',
    );
    expect(screen.getByTestId('readiness-checklist').querySelectorAll('.badge.bad')).toHaveLength(0);
  });
});

describe('POV list: sorting, filtering and keyboard', () => {
  const rows = (): PovView[] => {
    const [a, b, c] = fakeRows(3);
    return [
      {
        ...a!,
        name: 'Zeta',
        autoDelete: { at: '2026-12-20T00:00:00Z', status: 'armed', reason: null, scheduleId: 's', nextWarning: null, lastWarning: null },
        readiness: { overall: 'ready', summary: 'Ready for the customer.', shareExpiresAt: null },
      },
      {
        ...b!,
        name: 'alpha',
        autoDelete: { at: '2026-12-03T00:00:00Z', status: 'armed', reason: null, scheduleId: 's', nextWarning: null, lastWarning: null },
        readiness: { overall: 'attention', summary: 'x', shareExpiresAt: null },
      },
      { ...c!, name: 'Mid', readiness: { overall: 'not_ready', summary: 'y', shareExpiresAt: null } },
    ];
  };
  const names = (list: PovView[]) => list.map((p) => p.name);

  it('sorts by name, readiness and auto-delete time, and filters by text and readiness', () => {
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, sort: 'name', descending: false }))).toEqual(['alpha', 'Mid', 'Zeta']);
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, sort: 'readiness', descending: false }))).toEqual(['Mid', 'alpha', 'Zeta']);
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, sort: 'autoDelete', descending: false }))).toEqual(['alpha', 'Zeta', 'Mid']);
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, sort: 'name', descending: true }))).toEqual(['Zeta', 'Mid', 'alpha']);
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, query: 'ZET' }))).toEqual(['Zeta']);
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, readiness: 'attention' }))).toEqual(['alpha']);
    // fakeRows: row 0 suspended
    expect(names(arrange(rows(), { ...DEFAULT_ARRANGEMENT, query: 'suspended', sort: 'name', descending: false }))).toEqual(['Zeta']);
  });

  it(
    '"ready" finds the ready rows, a local rehearsal\'s "ready to rehearse" among them, and not the "not ready" ones: as text and ' +
      'as the Readiness filter',
    () => {
      const local: PovView = {
        ...fakeRows(4)[3]!,
        name: 'Rehearsal',
        platform: 'local',
        readiness: { overall: 'ready', summary: 'Ready to rehearse.', shareExpiresAt: null },
      };
      const all = [...rows(), local];
      const sorted = { ...DEFAULT_ARRANGEMENT, sort: 'name' as const, descending: false };
      expect(names(arrange(all, { ...sorted, query: 'ready' }))).toEqual(['Rehearsal', 'Zeta']);
      expect(names(arrange(all, { ...sorted, query: 'Ready to reh' }))).toEqual(['Rehearsal']);
      expect(names(arrange(all, { ...sorted, query: 'not ready' }))).toEqual(['Mid']);
      expect(names(arrange(all, { ...sorted, query: 'attention' }))).toEqual(['alpha']);

      let picked: Arrangement = sorted;
      render(<ListControls value={sorted} onChange={(a) => (picked = a)} shown={4} total={4} />);
      const select = screen.getByRole('combobox', { name: 'Readiness filter' }) as HTMLSelectElement;
      expect([...select.options].map((o) => [o.value, o.textContent])).toEqual([
        ['all', 'all'],
        ['ready', 'ready'],
        ['attention', 'attention'],
        ['not_ready', 'not ready'],
      ]);
      fireEvent.change(select, { target: { value: 'ready' } });
      expect(names(arrange(all, picked))).toEqual(['Rehearsal', 'Zeta']);
    },
  );

  it('arrow keys move between rows, Enter opens, Delete asks to destroy', async () => {
    const onOpen = vi.fn();
    const onAction = vi.fn();
    render(<PovList povs={rows()} jobs={{}} now={NOW} onOpen={onOpen} onAction={onAction} />);
    const first = screen.getByRole('button', { name: 'Zeta' });
    first.focus();
    fireEvent.keyDown(first, { key: 'ArrowDown' });
    await waitFor(() => expect(document.activeElement?.textContent).toBe('alpha'));
    fireEvent.keyDown(document.activeElement!, { key: 'ArrowUp' });
    await waitFor(() => expect(document.activeElement?.textContent).toBe('Zeta'));
    fireEvent.keyDown(document.activeElement!, { key: 'ArrowUp' }); // already first: stays
    expect(document.activeElement?.textContent).toBe('Zeta');
    fireEvent.keyDown(document.activeElement!, { key: 'Delete' });
    expect(onAction).toHaveBeenCalledWith('pov.destroy', expect.objectContaining({ name: 'Zeta' }));
    fireEvent.click(document.activeElement!); // Enter on a button is a click
    expect(onOpen).toHaveBeenCalledWith('p0');
  });
});
