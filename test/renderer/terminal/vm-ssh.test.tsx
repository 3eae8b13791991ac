import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { SshStatus } from '../../../shared/contract/ssh';
import { vmRecord } from '../../../shared/contract/vm';
import { VmList } from '../../../renderer/src/components/vm/vm-list';
import { openVmSsh } from '../../../renderer/src/components/vm/vm-detail';
import TerminalsPage from '../../../renderer/src/pages/terminals-page';
import { useTerminals } from '../../../renderer/src/state/terminals';
import { resetTerminalsAfterEach, terminalsTransport } from './terminals-page';

const vm = vmRecord.parse({
  id: 'a1b2c3d4',
  name: 'web-1',
  image: 'povdesk-test',
  cpus: 1,
  memoryMib: 512,
  diskGib: 1,
  requireAttestation: true,
  state: 'ready',
  accel: 'tcg',
  createdAt: '2026-12-01T00:00:00Z',
  startedAt: null,
  bootedAt: null,
  readyAt: null,
  durations: { installSeconds: null, bootSeconds: null, readySeconds: null },
  lastError: null,
  attestation: { required: true, userDataReleased: true, initrdVerified: true, readyVerified: true },
  sshPort: 40022,
  sshHostKey: null,
});
const status = (state: SshStatus['state']): SshStatus => ({
  sessionId: 's-ssh',
  state,
  closedBy: null,
  reason: null,
  attempt: 0,
  nextRetryMs: null,
  title: 'root@web-1',
  interactive: true,
});

/** The page's reads, and what each call asked; ssh.openVmSsh answers as the core does. */
function transport(calls: [string, unknown][], openVmSsh: () => Promise<unknown>) {
  terminalsTransport((method, args) => {
    calls.push([method, args]);
    if (method === 'ssh.openVmSsh') return openVmSsh();
    if (method === 'vm.list') return { vms: [vm] };
    if (method === 'ssh.resize') return { ok: true };
    return undefined;
  });
}

resetTerminalsAfterEach();

describe("Local VMs → SSH: a terminal signed in with the vm-manager's key", () => {
  it('asks the core for the session by VM id (no host, user or secret from the page) and says how it signed in once open', async () => {
    const calls: [string, unknown][] = [];
    transport(calls, async () => ({ sessionId: 's-ssh', title: 'root@web-1' }));
    render(
      <VmList
        vms={[vm]}
        selected={null}
        onSelect={() => {}}
        onChanged={() => {}}
        onSsh={(v) => openVmSsh(v, (m) => calls.push(['error', m]))}
      />,
    );
    fireEvent.click(screen.getByRole('button', { name: 'SSH' }));
    await waitFor(() => expect(useTerminals.getState().tabs.map((t) => t.title)).toEqual(['root@web-1']));
    expect(calls.find(([m]) => m === 'ssh.openVmSsh')?.[1]).toEqual({ vmId: 'a1b2c3d4', cols: 100, rows: 30 });
    cleanup();

    render(<TerminalsPage />);
    expect(screen.getByRole('tab', { name: 'root@web-1' })).toBeTruthy();
    expect(screen.queryByText("signed in with the vm-manager's key for web-1")).toBeNull();
    useTerminals.getState().setStatus(status('open'));
    expect(await screen.findByText("signed in with the vm-manager's key for web-1")).toBeTruthy();
  });

  it("a refusal (the VM's key unreadable) is said where SSH was pressed, and no tab opens", async () => {
    const calls: [string, unknown][] = [];
    transport(calls, async () => {
      throw Object.assign(
        new Error("cannot sign in to VM web-1 (a1b2c3d4) with the vm-manager's key: /x/manager_ed25519_key may be read by others"),
        { code: 'unavailable' },
      );
    });
    openVmSsh(vm, (m) => calls.push(['error', m]));
    await waitFor(() => expect(calls.find(([m]) => m === 'error')?.[1]).toMatch(/^SSH into web-1: .*may be read by others/));
    expect(useTerminals.getState().tabs).toEqual([]);
  });
});
