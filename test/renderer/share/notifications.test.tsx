import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { setTransport } from '../../../renderer/src/api';
import { Notifications } from '../../../renderer/src/components/share/notifications';
import { TOAST_MS, useNotify } from '../../../renderer/src/state/notify';
import { testCore } from '../../foundation/helpers';
import { coreTransport } from '../core-transport';

/** The notification bell, list and toasts over a real core (SQLite, the notify service, the stream). */
describe('notifications', () => {
  let core: Core;
  beforeEach(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
    useNotify.setState(useNotify.getInitialState());
  });
  afterEach(async () => {
    cleanup();
    await core.close();
  });

  it('100 identical events are one toast and one row counted 100; a toast hides after ~5 s, an urgent one stays', async () => {
    render(<Notifications />);
    const notify = core.services.notify;
    await waitFor(() => expect(useNotify.getState().settings).not.toBeNull());
    await act(async () => {
      for (let i = 0; i < 100; i++)
        notify.push({ kind: 'auto_delete', povId: 'p1', title: 'Auto-delete not armed for POV "A"', body: 'why' });
      notify.push({ kind: 'ladder', povId: 'p1', title: 'POV "A" is deleted in 30 minutes', body: 'last', urgent: true });
    });
    expect(screen.getAllByTestId('toast')).toHaveLength(2);
    fireEvent.click(screen.getByRole('button', { name: /Notifications \(2 unread\)/ }));
    await act(async () => {
      await useNotify.getState().load();
    });
    const rows = screen.getAllByTestId('notification');
    expect(rows).toHaveLength(2);
    expect(rows[1]!.textContent).toContain('×100');
    await act(() => new Promise((r) => setTimeout(r, TOAST_MS + 300)));
    const left = screen.getAllByTestId('toast');
    expect(left).toHaveLength(1);
    expect(left[0]!.textContent).toContain('deleted in 30 minutes');
  }, 15_000);

  it('do not disturb holds all but urgent ones: listed, no toast', async () => {
    render(<Notifications />);
    fireEvent.click(screen.getByRole('button', { name: /Notifications/ }));
    const box = await screen.findByLabelText('Do not disturb');
    await act(async () => {
      fireEvent.click(box);
    });
    await waitFor(() => expect(useNotify.getState().settings?.doNotDisturb).toBe(true));
    const notify = core.services.notify;
    // The held warning goes first and the urgent one second: events arrive in order, so once the
    // urgent toast shows, the held one has arrived too and must not have toasted.
    await act(async () => {
      notify.push({ kind: 'ladder', povId: 'p1', title: 'deleted in 3 days', body: 'x' });
    });
    await act(async () => {
      notify.push({ kind: 'ladder', povId: 'p1', title: 'deleted in 30 minutes', body: 'x', urgent: true });
    });
    await waitFor(() => expect(screen.getAllByTestId('toast')).toHaveLength(1));
    expect(screen.getByTestId('toast').textContent).toContain('deleted in 30 minutes');
    await act(async () => {
      await useNotify.getState().load();
    });
    await waitFor(() =>
      expect(screen.getAllByTestId('notification').map((n) => n.textContent)).toEqual([
        expect.stringContaining('deleted in 30 minutes'),
        expect.stringContaining('held (do not disturb)'),
      ]),
    );
  });
});
