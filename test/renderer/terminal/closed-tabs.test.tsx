import { render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { SshStatus } from '../../../shared/contract/ssh';
import TerminalsPage from '../../../renderer/src/pages/terminals-page';
import { connectFailure } from '../../../renderer/src/components/terminal/session-status';
import { useTerminals } from '../../../renderer/src/state/terminals';
import { useVms } from '../../../renderer/src/state/vms';
import { resetTerminalsAfterEach, terminalsTransport } from './terminals-page';

const closed = (over: Partial<SshStatus> = {}): SshStatus => ({
  sessionId: 's1',
  state: 'closed',
  closedBy: 'dropped',
  reason: 'serial socket closed',
  attempt: 0,
  nextRetryMs: null,
  title: 'web serial',
  interactive: true,
  ...over,
});

/** The page's reads answered from a fixed list of VMs (this test is about what the page offers). */
function vmsAre(ids: string[]) {
  terminalsTransport((method) => (method === 'vm.list' ? { vms: ids.map((id) => ({ id })) } : undefined));
}

resetTerminalsAfterEach();

describe('Terminals: closed tabs', () => {
  it("a local VM's console tab offers Reconnect while the VM exists, and not once it was destroyed", async () => {
    vmsAre(['vm-1']);
    useTerminals.setState({ tabs: [{ sessionId: 's1', title: 'web serial', status: closed(), vmId: 'vm-1' }], active: 's1' });
    const { unmount } = render(<TerminalsPage />);
    expect(await screen.findByRole('button', { name: 'Reconnect' })).toBeTruthy();
    unmount();

    vmsAre([]);
    useVms.setState({ vms: null });
    render(<TerminalsPage />);
    await waitFor(() => expect(screen.getByText('the VM was destroyed: close this tab')).toBeTruthy());
    expect(screen.queryByRole('button', { name: 'Reconnect' })).toBeNull();
  });

  it('a session that failed or was refused before opening gives the form its reason; others give none', () => {
    expect(connectFailure(closed({ closedBy: 'failed', reason: 'connect ECONNREFUSED 127.0.0.1:2222' }))).toBe(
      'Could not connect: failed: connect ECONNREFUSED 127.0.0.1:2222',
    );
    expect(connectFailure(closed({ closedBy: 'refused', reason: 'host key refused' }))).toMatch(/^Could not connect: refused/);
    expect(connectFailure(closed({ closedBy: 'user' }))).toBeNull();
    expect(connectFailure({ ...closed(), state: 'open', closedBy: null })).toBeNull();
    expect(connectFailure(null)).toBeNull();
  });
});
