import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import type { SettingsView } from '../../shared/contract';
import { setTransport } from '../../renderer/src/api';
import { GatewaySettings } from '../../renderer/src/components/pam/gateway-settings';
import SettingsPage from '../../renderer/src/pages/settings-page';
import ControlNodeSettings from '../../renderer/src/pages/settings/control-node-settings';
import { useSettings } from '../../renderer/src/state/settings';
import type { Transport } from '../../renderer/src/transport';
import { testCore } from '../foundation/helpers';
import { coreTransport } from './core-transport';

/**
 * The settings forms against a real core whose answers to the loads are held back, as a keychain
 * lookup holds them back: what the person typed before the saved values came is still there when
 * they come, Save sends it, and a load that a save overtook does not put its stale view back.
 *
 * A CI run failed on the first of these in Chromium (secrets-scan.spec): the view wiped the
 * username, the browser refused the submit as a required field, and "token set" never came.
 */
let core: Core;
/** The core answers calls to these methods at once; the answer reaches the page when the test releases it. */
const held = new Map<string, (() => void)[]>();
function holding(inner: Transport, methods: string[]): Transport {
  for (const m of methods) held.set(m, []);
  return {
    ...inner,
    call: async (method, args) => {
      const answer = inner.call(method, args);
      answer.catch(() => undefined);
      const queue = held.get(method);
      if (queue) await new Promise<void>((r) => queue.push(r));
      return answer;
    },
  };
}
/** Delivers the oldest held answer of `method`; waits until there is one. */
async function release(method: string) {
  await waitFor(() => expect(held.get(method)?.length).toBeGreaterThan(0));
  held.get(method)!.shift()!();
}
const input = (form: HTMLElement, label: string | RegExp) => within(form).getByLabelText(label) as HTMLInputElement;

beforeAll(async () => {
  core = await testCore();
}, 60_000);
afterAll(async () => {
  await core?.close();
});
afterEach(() => {
  cleanup();
  setTransport(null);
  held.clear();
  useSettings.setState({ view: null, error: null });
});

describe('settings forms keep what was typed before the saved values came', () => {
  it('Skytap: the username and URL typed early survive the load, and Save stores them with the token', async () => {
    setTransport(holding(coreTransport(core), ['settings.get']));
    render(<SettingsPage />);
    const form = screen.getByRole('form', { name: 'Skytap credentials' });
    fireEvent.change(input(form, 'Username'), { target: { value: 'demo' } });
    fireEvent.change(input(form, /URL/), { target: { value: 'https://skytap.example.test' } });
    fireEvent.change(input(form, 'API token'), { target: { value: 'tok-early-0123456789' } });

    await release('settings.get');
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token not set'));
    expect(input(form, 'Username').value).toBe('demo');
    expect(input(form, /URL/).value).toBe('https://skytap.example.test');

    fireEvent.submit(form);
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token set'));
    const saved = (await core.dispatcher.call('settings.get', {}, { transport: 'test' })) as SettingsView;
    expect(saved.skytap).toMatchObject({ username: 'demo', url: 'https://skytap.example.test', tokenSet: true });
  });

  it('Skytap: a load answered after a save does not put back the view from before the save', async () => {
    await core.dispatcher.call('settings.clearSkytapToken', {}, { transport: 'test' });
    setTransport(holding(coreTransport(core), ['settings.get']));
    render(<SettingsPage />);
    await release('settings.get'); // the page's first load: the form shows what is saved
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token not set'));

    void useSettings.getState().load(); // another page asks again; its answer is slow to come
    const form = screen.getByRole('form', { name: 'Skytap credentials' });
    fireEvent.change(input(form, 'API token'), { target: { value: 'tok-later-0123456789' } });
    fireEvent.submit(form);
    await waitFor(() => expect(screen.getByTestId('token-status').textContent).toBe('token set'));
    await release('settings.get'); // read before the save: "token not set"
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.getByTestId('token-status').textContent).toBe('token set');
  });

  it('Control node: the URL typed early survives the load; Save enables once it came, and stores it', async () => {
    setTransport(holding(coreTransport(core), ['controlNode.getSettings']));
    render(<ControlNodeSettings />);
    const form = screen.getByRole('form', { name: 'Control node settings' });
    fireEvent.change(input(form, 'Control-plane URL'), { target: { value: 'https://cp.example.test' } });

    await release('controlNode.getSettings');
    await waitFor(() => expect(within(form).getByRole('button', { name: 'Save' }).hasAttribute('disabled')).toBe(false));
    expect(input(form, 'Control-plane URL').value).toBe('https://cp.example.test');
    fireEvent.submit(form);
    await waitFor(() => expect(screen.getByText('Saved. The next Install control node uses these settings.')).toBeTruthy());
    const saved = (await core.dispatcher.call('controlNode.getSettings', {}, { transport: 'test' })) as { controlPlaneUrl: string };
    expect(saved.controlPlaneUrl).toBe('https://cp.example.test');
  });

  it('Jumpoint container: the image typed early survives the load, and Save stores it', async () => {
    setTransport(holding(coreTransport(core), ['pam.getSettings']));
    render(<GatewaySettings />);
    const form = screen.getByRole('form', { name: 'Jumpoint container' });
    fireEvent.change(input(form, 'Jumpoint image'), { target: { value: 'registry.example.test/jumpoint:1' } });

    await release('pam.getSettings');
    await new Promise((r) => setTimeout(r, 50)); // the load's answer has been applied
    expect(input(form, 'Jumpoint image').value).toBe('registry.example.test/jumpoint:1');
    fireEvent.submit(form);
    await waitFor(() => expect(within(form).getByText('Saved.')).toBeTruthy());
    const saved = (await core.dispatcher.call('pam.getSettings', {}, { transport: 'test' })) as { gatewayImage: string };
    expect(saved.gatewayImage).toBe('registry.example.test/jumpoint:1');
  });
});
