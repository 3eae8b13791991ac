import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Core } from '../../../main/core/create';
import { ControlPlaneDouble } from '../../support/control-plane-double';
import { BEGIN_MARKER, END_MARKER } from '../../../main/services/control-node/markers';
import { STATE_VOLUME } from '../../../main/services/control-node/payload';
import { api } from '../../../renderer/src/api';
import PovsPage from '../../../renderer/src/pages/povs-page';
import ControlNodeSettings from '../../../renderer/src/pages/settings/control-node-settings';
import { makeBundle } from '../../control-node/fixtures';
import type { Emulator } from '../../skytap-emulator/emulator';
import { povPageWorld } from './pov-core';

/**
 * The Control node column and Settings → Control node against a real core (SQLite, job runner,
 * the control-node handlers), the Skytap emulator and the control-plane double on loopback. A
 * "guest" loop stands in for the template runner and the agent: it reads the VM's user_data in
 * the emulator and enrols the agent the bootstrap names.
 */
let core: Core;
let emu: Emulator;
let cp: ControlPlaneDouble;
let guestOn = false;

beforeEach(async () => {
  cp = await new ControlPlaneDouble().start();
  ({ core, emu } = await povPageWorld());
});
afterEach(async () => {
  guestOn = false;
  cleanup();
  await core.close();
  await cp.stop();
  await emu.close();
});

function startGuest() {
  guestOn = true;
  void (async () => {
    while (guestOn) {
      for (const env of emu.state.environments.values()) {
        for (const vm of env.vms) {
          const ud = vm.userData;
          if (!ud.includes(BEGIN_MARKER) || !ud.includes(END_MARKER)) continue;
          const agent = /AGENT_ID='([^']+)'/.exec(ud)?.[1];
          if (agent && cp.agents.get(agent)?.state === 'pending') cp.enrol(agent, 'ed25519');
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
}

function row(name: string): HTMLElement {
  return screen.getByRole('button', { name }).closest('[role="row"]') as HTMLElement;
}

describe('Control node column on the POVs page', () => {
  it('two Linux VMs: none with the reason; name VM re-resolves; Install control node ends enrolled with the Ed25519 label', async () => {
    await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
    await api.call('controlNode.saveSettings', { controlPlaneUrl: cp.url, token: cp.token, agentImage: 'registry.example.com/agent:1' });
    const tpl = [...emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
    const { jobId } = await api.call('pov.create', { templateId: tpl.id, name: 'Hooli' });
    await core.base.jobs.wait(jobId);

    render(<PovsPage />);
    await screen.findByRole('button', { name: 'Hooli' });
    const cn = () => within(row('Hooli')).getByTestId('control-node');
    expect(within(cn()).getByTestId('cn-vm').textContent).toBe('none');
    expect(within(cn()).getByTestId('cn-reason').textContent).toMatch(/2 Linux VMs.*candidates: control-node, rhel-target/);
    expect(within(row('Hooli')).queryByText(/failed/)).toBeNull(); // the refusal is not the row's error

    fireEvent.click(within(cn()).getByRole('button', { name: 'name VM for Hooli' }));
    const dialog = await screen.findByRole('dialog', { name: 'Control node VM for Hooli' });
    await waitFor(() => expect(dialog.querySelectorAll('datalist option')).toHaveLength(4));
    fireEvent.change(within(dialog).getByLabelText('Control node VM name'), { target: { value: 'Control-Node' } });
    const calls = vi.spyOn(api, 'call');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect((await within(dialog).findByRole('status')).textContent).toMatch(/Control node: control-node/);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Close' }));
    await waitFor(() => expect(within(cn()).getByTestId('cn-vm').textContent).toBe('control-node'));
    expect(within(cn()).queryByTestId('cn-reason')).toBeNull();
    // the row moved by the pov.updated event the save published, not by reading the whole list again
    expect(calls.mock.calls.map(([m]) => m)).toEqual(['pov.setControlNodeName']);
    calls.mockRestore();

    startGuest();
    fireEvent.click(within(cn()).getByRole('button', { name: 'Install control node for Hooli' }));
    await waitFor(() => expect(within(cn()).getByTestId('cn-mode').textContent).toBe('Ed25519'), { timeout: 15_000 });
    expect(within(cn()).getByTestId('cn-status').textContent).toBe('enrolled');
    expect(within(cn()).queryByRole('button', { name: /Install control node/ })).toBeNull();

    // Rebuild control node: asked first (no changes nothing), then the bootstrap runs again on the
    // enrolled node: the old agent revoked, the state volume removed by the payload, a new agent enrolled.
    const [first] = [...cp.agents.values()];
    const confirm = vi.spyOn(window, 'confirm').mockReturnValueOnce(false).mockReturnValueOnce(true);
    const rebuild = () => within(cn()).getByRole('button', { name: 'Rebuild control node for Hooli' });
    fireEvent.click(rebuild());
    expect(confirm.mock.calls[0]![0]).toMatch(
      /^Rebuild the control node on control-node for "Hooli"\?.*current agent is revoked.*state volume is removed/,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(cp.agents.size).toBe(1);
    const putsBefore = emu.requests.filter((r) => r.method === 'PUT' && r.path.includes('/user_data')).length;
    fireEvent.click(rebuild());
    await waitFor(
      () =>
        expect([...cp.agents.values()].filter((a) => a.state === 'enrolled').map((a) => a.agentId)).toEqual([
          expect.not.stringMatching(first!.agentId),
        ]),
      { timeout: 15_000 },
    );
    expect(cp.agents.get(first!.agentId)!.state).toBe('revoked');
    await waitFor(() => expect(within(cn()).getByTestId('cn-status').textContent).toBe('enrolled'));
    const puts = emu.requests.filter((r) => r.method === 'PUT' && r.path.includes('/user_data')).slice(putsBefore);
    expect((puts[0]!.body as { contents: string }).contents).toContain(`docker volume rm -f ${STATE_VOLUME}`);
    expect(rebuild()).toBeTruthy();
    confirm.mockRestore();
  }, 40_000);

  it('name VM with a name no VM has is refused with the candidates, and the Resource Broker host field resolves instead', async () => {
    await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
    const tpl = [...emu.state.templates.values()].find((t) => t.name.startsWith('PAM POV'))!;
    await core.base.jobs.wait((await api.call('pov.create', { templateId: tpl.id, name: 'Pied Piper' })).jobId);
    render(<PovsPage />);
    await screen.findByRole('button', { name: 'Pied Piper' });
    fireEvent.click(screen.getByRole('button', { name: 'name VM for Pied Piper' }));
    const dialog = await screen.findByRole('dialog', { name: 'Control node VM for Pied Piper' });
    fireEvent.change(within(dialog).getByLabelText('Control node VM name'), { target: { value: 'broker' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect((await within(dialog).findByRole('status')).textContent).toMatch(
      /^No control node: no VM is called "broker".*candidates: .*control-node.*rhel-target/,
    );
    fireEvent.change(within(dialog).getByLabelText('Control node VM name'), { target: { value: '' } });
    fireEvent.change(within(dialog).getByLabelText('Resource Broker host'), { target: { value: 'rhel-target' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(within(dialog).getByRole('status').textContent).toMatch(/Control node: control-node/));
    fireEvent.click(within(dialog).getByRole('button', { name: 'Close' }));
    await waitFor(() => expect(within(row('Pied Piper')).getByTestId('cn-vm').textContent).toBe('control-node'));
  }, 30_000);
});

describe('Settings → Control node', () => {
  it('saves URL, write-only token, image and SPIRE fields (default port written out); refuses a bad bundle', async () => {
    render(<ControlNodeSettings />);
    const form = await screen.findByRole('form', { name: 'Control node settings' });
    await waitFor(() => expect(screen.getByTestId('control-plane-token-status').textContent).toBe('token not set'));
    fireEvent.change(within(form).getByLabelText('Control-plane URL'), { target: { value: cp.url } });
    fireEvent.change(within(form).getByLabelText('Control-plane token'), { target: { value: cp.token } });
    fireEvent.change(within(form).getByLabelText('Agent image'), { target: { value: 'registry.example.com/agent:2' } });
    fireEvent.click(within(form).getByLabelText('Let agents attest through SPIRE'));
    fireEvent.change(within(form).getByLabelText('SPIRE trust domain'), { target: { value: 'example.org' } });
    fireEvent.change(within(form).getByLabelText('SPIRE server address for agents'), { target: { value: 'spire.example.org' } });
    const bundle = makeBundle();
    fireEvent.change(within(form).getByLabelText('SPIRE trust bundle (PEM)'), { target: { value: bundle } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save' }));
    expect((await screen.findByRole('status')).textContent).toMatch(/Saved/);
    expect(screen.getByTestId('control-plane-token-status').textContent).toBe('token set');
    expect((within(form).getByLabelText('Control-plane token') as HTMLInputElement).value).toBe('');
    expect((within(form).getByLabelText('SPIRE server address for agents') as HTMLInputElement).value).toBe('spire.example.org:8081');
    const saved = await api.call('controlNode.getSettings', {});
    expect(saved).toMatchObject({
      controlPlaneUrl: cp.url,
      agentImage: 'registry.example.com/agent:2',
      spireEnabled: true,
      spireTrustDomain: 'example.org',
      tokenSet: true,
    });
    expect(JSON.stringify(saved)).not.toContain(cp.token);

    fireEvent.change(within(form).getByLabelText('SPIRE trust bundle (PEM)'), { target: { value: 'not a certificate' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save' }));
    expect((await screen.findByRole('alert')).textContent).toMatch(/trust bundle/);
    expect((await api.call('controlNode.getSettings', {})).spireTrustBundle.trim()).toBe(bundle.trim());
  }, 20_000);
});
