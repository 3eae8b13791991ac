import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import type { VmConnection } from '../../../shared/contract/vm';
import { api, setTransport } from '../../../renderer/src/api';
import { ConnectionPanel } from '../../../renderer/src/components/vm/connection-panel';
import { VmTools } from '../../../renderer/src/components/vm/vm-tools';
import { useVms } from '../../../renderer/src/state/vms';
import { testCore } from '../../foundation/helpers';
import { StrictDouble } from '../../vm-api/double';
import { TestIssuer } from '../../vm-api/issuer';
import { firstLine } from '../../vm-api/support';
import { attachLocalManager } from '../../vm/helpers';
import { coreTransport } from '../core-transport';

const TOKEN = 'local-manager-token-0123456789';
afterEach(() => cleanup());

/**
 * The VM panel's exec and port forwarding, with the real store and a real core whose vm-manager
 * is the strict double of giantswarm's API (which the core's supervisor reattaches to as its local manager).
 */
describe('VM panel: exec and forwarded ports', () => {
  let core: Core;
  let double: StrictDouble;
  let vm = { id: '', name: 'panel', state: 'ready' as const };
  beforeAll(async () => {
    core = await testCore();
    double = await new StrictDouble({ tokenOk: (t) => t === TOKEN, stepMs: 10 }).start();
    attachLocalManager(core.base.home, { url: double.url, token: TOKEN });
    setTransport(coreTransport(core));
    const job = await core.base.jobs.wait(
      core.services.vm.create({
        name: 'panel',
        image: 'giantswarm-vm-base',
        cpus: 1,
        memoryMib: 512,
        diskGib: 1,
        requireAttestation: false,
      }),
    );
    vm = { ...vm, id: (job.result as { vm: { id: string } }).vm.id };
  });
  afterAll(async () => {
    cleanup();
    await core.close();
    await double.close();
  });

  it('runs a command and shows its output; a non-zero exit is shown as a result', async () => {
    render(<VmTools vm={vm} remote={false} />);
    const form = screen.getByRole('form', { name: 'Run a command' });
    fireEvent.change(within(form).getByPlaceholderText('uname -a'), { target: { value: 'echo hello from the guest' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Run' }));
    expect(await screen.findByText('hello from the guest', { selector: 'pre' })).toBeTruthy();
    expect(screen.getByText('exit 0')).toBeTruthy();
    fireEvent.change(within(form).getByPlaceholderText('uname -a'), { target: { value: 'exit 3' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Run' }));
    expect(await screen.findByText('exit 3')).toBeTruthy();
    expect(screen.getAllByTestId('vm-exec-run')).toHaveLength(2);
    cleanup();
  });

  it('forwards a guest port to 127.0.0.1, lists it, and removes it', async () => {
    render(<VmTools vm={vm} remote={false} />);
    const form = screen.getByRole('form', { name: 'Forward a port' });
    const input = within(form).getByPlaceholderText('8080');
    fireEvent.change(input, { target: { value: '70000' } });
    expect(within(form).getByText('a port from 1 to 65535')).toBeTruthy();
    expect((within(form).getByRole('button', { name: 'Forward' }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(input, { target: { value: '8080' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Forward' }));
    const row = await screen.findByTestId('vm-forward');
    const address = within(row).getByText(/^127\.0\.0\.1:\d+$/).textContent!;
    expect(row.textContent).toContain('guest port 8080');
    expect(await firstLine(address)).toBe(`guest ${vm.id}:8080`);
    fireEvent.click(within(row).getByRole('button', { name: 'Remove forward of port 8080' }));
    await waitFor(() => expect(screen.queryByTestId('vm-forward')).toBeNull());
    expect(screen.getByText('No ports forwarded.')).toBeTruthy();
    await expect(firstLine(address)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    cleanup();
  });

  it('a stopped VM offers neither', () => {
    render(<VmTools vm={{ ...vm, state: 'stopped' as never }} remote={false} />);
    expect(screen.getByText(/is stopped: start it/)).toBeTruthy();
    expect((screen.getByPlaceholderText('uname -a') as HTMLInputElement).disabled).toBe(true);
    cleanup();
  });
});

/** Connection panel: OIDC settings, the device-code login, and the re-login prompt after a refused refresh. */
describe('Connection panel with an OIDC login', () => {
  let core: Core;
  let issuer: TestIssuer;
  let double: StrictDouble;
  beforeAll(async () => {
    core = await testCore();
    issuer = await new TestIssuer({ clientId: 'povdesk', interval: 1 }).start();
    double = await new StrictDouble({ tokenOk: (t) => issuer.accepts(t), stepMs: 10 }).start();
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    await core.close();
    await double.close();
    await issuer.close();
  });

  it('saves issuer and client id, logs in with the shown code, and prompts to log in again once the login is refused', async () => {
    let connection: VmConnection = await api.call('vm.connection', {});
    const reload = async () => {
      connection = await api.call('vm.connection', {});
      view.rerender(
        <ConnectionPanel key={`${connection.mode}${connection.tokenSet}`} connection={connection} onChanged={() => void reload()} />,
      );
    };
    const view = render(<ConnectionPanel connection={connection} onChanged={() => void reload()} />);
    fireEvent.change(screen.getByPlaceholderText('https://vm-manager.example:8443'), { target: { value: double.url } });
    fireEvent.click(screen.getByLabelText(/OIDC login/));
    fireEvent.change(screen.getByPlaceholderText('https://dex.cluster.example'), { target: { value: issuer.url } });
    fireEvent.change(screen.getByPlaceholderText('povdesk'), { target: { value: 'povdesk' } });
    // the issuer's private CA
    fireEvent.change(screen.getByPlaceholderText('/etc/ssl/cluster-ca.pem'), { target: { value: issuer.caFile } });
    fireEvent.click(screen.getByRole('button', { name: 'Use remote' }));
    const prompt = await screen.findByTestId('vm-relogin');
    fireEvent.click(within(prompt).getByRole('button', { name: 'Log in' }));
    const code = await screen.findByTestId('vm-login-code');
    const userCode = code.querySelector('strong')!.textContent!;
    expect(code.querySelector('a')!.getAttribute('href')).toContain(userCode);
    await act(async () => issuer.approve(userCode));
    await waitFor(() => expect(screen.queryByTestId('vm-login-code')).toBeNull(), { timeout: 5000 });
    await waitFor(() => expect(screen.getByRole('button', { name: 'Log out' })).toBeTruthy());
    expect((await api.call('vm.list', {})).vms).toEqual([]);

    // the cluster stops accepting the token and the refresh token is revoked: the call says why, the panel asks to log in
    await issuer.expireAccessTokens();
    await issuer.revokeRefreshTokens();
    await expect(api.call('vm.list', {})).rejects.toMatchObject({ code: 'unauthorized', detail: { relogin: true } });
    await act(async () => reload());
    expect((await screen.findByTestId('vm-relogin')).textContent).toContain(issuer.url);
    // the page's store: a refused list reads the connection again, which is what opens the prompt there
    useVms.setState({ connection: { ...connection, tokenSet: true } });
    await act(async () => useVms.getState().refresh());
    expect(useVms.getState().listError).toMatch(/log in to the cluster's identity provider again/);
    await waitFor(() => expect(useVms.getState().connection).toMatchObject({ auth: 'oidc', tokenSet: false }));
  }, 20_000);
});
