import { cleanup, render, screen, waitFor } from '@testing-library/react';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { serve, type RunningManager } from '../../../main/vm-manager/server';
import { api, setTransport } from '../../../renderer/src/api';
import LocalVmsPage from '../../../renderer/src/pages/local-vms-page';
import { useVms } from '../../../renderer/src/state/vms';
import { vmRecord, type VmRecord } from '../../../shared/contract/vm';
import { testCore } from '../../foundation/helpers';
import { vmSkip } from '../../vm/helpers';
import { coreTransport } from '../core-transport';

const skip = vmSkip();

const record = (state: VmRecord['state']): VmRecord =>
  vmRecord.parse({
    id: 'a1b2c3d4',
    name: 'ev-one',
    image: 'povdesk-test',
    cpus: 1,
    memoryMib: 512,
    diskGib: 1,
    requireAttestation: false,
    state,
    accel: 'tcg',
    createdAt: new Date().toISOString(),
    startedAt: null,
    bootedAt: null,
    readyAt: null,
    durations: { installSeconds: null, bootSeconds: null, readySeconds: null },
    lastError: null,
    attestation: { required: false, userDataReleased: false, initrdVerified: null, readyVerified: null },
    sshPort: null,
    sshHostKey: null,
  });

/**
 * The Local VMs page reads the list once and then only listens: a `vm.updated` event on the core's
 * hub shows in the row at once, and the page asks for vm.list no more. A page that polled would
 * never show this VM (the manager has none) and would count calls. The manager is the real one
 * (in-process, no VM started), reached as a remote manager over loopback.
 */
describe.skipIf(skip !== null)('Local VMs page follows vm.updated', () => {
  let core: Core;
  let manager: RunningManager;
  const state = mkdtempSync(join(tmpdir(), 'povdesk-vmupd-'));
  let lists = 0;

  beforeAll(async () => {
    manager = await serve({ stateDir: state, token: 'T0K', accel: 'tcg' });
    core = await testCore();
    const inner = coreTransport(core);
    setTransport({
      ...inner,
      call: (method, args) => {
        if (method === 'vm.list') lists++;
        return inner.call(method, args);
      },
    });
    useVms.setState({ vms: null, images: null, host: null, listError: null, hostError: null });
    await api.call('vm.setConnection', { mode: 'remote', url: manager.url, token: manager.token });
  }, 60_000);
  afterAll(async () => {
    cleanup();
    await core?.close();
    await manager?.close({ stopVms: true });
    rmSync(state, { recursive: true, force: true });
  });

  it('shows a VM, its new state and its removal from events alone, without reading the list again', async () => {
    render(<LocalVmsPage />);
    expect(await screen.findByText('No VMs', {}, { timeout: 20_000 })).toBeTruthy();
    const readsAfterLoad = lists;
    expect(readsAfterLoad).toBe(1);
    const row = () => document.querySelector('tr[data-vm="ev-one"]');

    core.base.hub.publish('vm.updated', 'a1b2c3d4', { id: 'a1b2c3d4', vm: record('booting') });
    await waitFor(() => expect(row()?.textContent).toMatch(/booting/), { timeout: 1000 });
    core.base.hub.publish('vm.updated', 'a1b2c3d4', { id: 'a1b2c3d4', vm: record('ready') });
    await waitFor(() => expect(row()?.textContent).toMatch(/ready/), { timeout: 1000 });
    core.base.hub.publish('vm.updated', 'a1b2c3d4', { id: 'a1b2c3d4', vm: null });
    await waitFor(() => expect(row()).toBeNull(), { timeout: 1000 });
    expect(screen.getByText('No VMs')).toBeTruthy();
    // several seconds on: still no second vm.list from the page
    await new Promise((r) => setTimeout(r, 2500));
    expect(lists).toBe(readsAfterLoad);
  }, 60_000);
});
