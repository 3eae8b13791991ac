import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../../main/core/create';
import { secretAccount } from '../../../main/services/ssh/profiles';
import type { SshProfile } from '../../../shared/contract/ssh';
import { setTransport } from '../../../renderer/src/api';
import { Profiles } from '../../../renderer/src/components/terminal/profiles';
import { testCore } from '../../foundation/helpers';
import { coreTransport } from '../core-transport';

/**
 * The Terminals page's profiles against a real core: a profile is edited in place (same id), its
 * stored password kept unless other credentials are chosen, its jump hosts kept as stored when the
 * field is left alone; Cancel edit leaves it untouched.
 */
describe('Terminals page: SSH profiles', () => {
  let core: Core;
  const profiles = async () => (await core.dispatcher.call('ssh.profiles.list', {}, { transport: 'test' })) as SshProfile[];

  beforeAll(async () => {
    core = await testCore();
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    setTransport(null);
    await core?.close();
  });

  it('edits a profile in place, keeping its stored password and jump hosts; Cancel edit changes nothing', async () => {
    render(<Profiles />);
    const form = () => screen.getByRole('form', { name: /profile/ });
    const fill = (label: RegExp, value: string) => fireEvent.change(within(form()).getByLabelText(label), { target: { value } });
    await screen.findByText(/No saved profiles/);
    fill(/^Name/, 'demo box');
    fill(/^Host/, 'demo.example');
    fill(/^Port/, '2222');
    fill(/^User/, 'se');
    fill(/^Credentials/, 'password');
    fill(/^Password/, 's3cret-pw');
    fill(/^Jump hosts/, 'hop@bastion.example:22');
    fireEvent.click(within(form()).getByRole('button', { name: 'Save profile' }));
    await screen.findByText('demo box');
    const [made] = await profiles();
    expect(made).toMatchObject({
      host: 'demo.example',
      port: 2222,
      authKind: 'password',
      jump: [{ host: 'bastion.example', port: 22, username: 'hop', profileId: null }],
    });
    // A new profile takes the contract's defaults, shown in the form.
    expect(made).toMatchObject({ keepaliveSec: 15, autoReconnect: true });

    fireEvent.click(screen.getByRole('button', { name: 'Edit demo box' }));
    expect(form().getAttribute('aria-label')).toBe('Edit profile demo box');
    const values = [/^Name/, /^Host/, /^Port/, /^User/, /^Credentials/, /^Jump hosts/].map(
      (l) => (within(form()).getByLabelText(l) as HTMLInputElement).value,
    );
    expect(values).toEqual(['demo box', 'demo.example', '2222', 'se', 'keep', 'hop@bastion.example:22']);
    expect(within(form()).queryByLabelText(/^Password/)).toBeNull(); // kept, not asked again
    fill(/^Host/, 'demo2.example');
    fireEvent.click(within(form()).getByRole('button', { name: 'Save changes' }));
    await screen.findByText(/se@demo2\.example:2222/);
    const [edited] = await profiles();
    expect(edited).toMatchObject({
      id: made!.id,
      name: 'demo box',
      host: 'demo2.example',
      authKind: 'password',
      jump: made!.jump,
      createdAt: made!.createdAt,
    });
    expect(await core.base.secrets.get(secretAccount(made!.id, 'password'))).toBe('s3cret-pw');
    expect(form().getAttribute('aria-label')).toBe('New profile');
    expect((within(form()).getByLabelText(/^Host/) as HTMLInputElement).value).toBe('');

    // Choosing a new key warns that the server must learn it; Cancel edit leaves the profile as it was.
    fireEvent.click(screen.getByRole('button', { name: 'Edit demo box' }));
    fill(/^Credentials/, 'generate');
    expect(within(form()).getByRole('status').textContent).toBe(
      "A new key replaces the stored password: paste its public half (shown here after saving) into the server's authorized_keys " +
        'before you connect again.',
    );
    fill(/^Port/, '22');
    fireEvent.click(within(form()).getByRole('button', { name: 'Cancel edit' }));
    expect(form().getAttribute('aria-label')).toBe('New profile');
    expect(await profiles()).toEqual([edited]);
    expect(screen.queryByRole('status')).toBeNull();

    // Keepalive and reconnect: shown as stored, changed in place; a keepalive that is not 0–3600 s
    // (or left empty) is refused with what is wrong, and changes nothing.
    fireEvent.click(screen.getByRole('button', { name: 'Edit demo box' }));
    expect((within(form()).getByLabelText(/^Keepalive/) as HTMLInputElement).value).toBe('15');
    const reconnect = within(form()).getByLabelText(/^Reconnect when/) as HTMLInputElement;
    expect(reconnect.checked).toBe(true);
    for (const bad of ['', '99999', 'soon']) {
      fill(/^Keepalive/, bad);
      fireEvent.click(within(form()).getByRole('button', { name: 'Save changes' }));
      expect((await screen.findByRole('alert')).textContent).toBe(
        `Keepalive: "${bad}" is not a whole number of seconds from 0 (none) to 3600`,
      );
      expect(await profiles()).toEqual([edited]);
    }
    fill(/^Keepalive/, '30');
    fireEvent.click(reconnect);
    fireEvent.click(within(form()).getByRole('button', { name: 'Save changes' }));
    await waitFor(async () => expect((await profiles())[0]).toMatchObject({ id: made!.id, keepaliveSec: 30, autoReconnect: false }));
    fireEvent.click(screen.getByRole('button', { name: 'Edit demo box' }));
    expect((within(form()).getByLabelText(/^Keepalive/) as HTMLInputElement).value).toBe('30');
    expect((within(form()).getByLabelText(/^Reconnect when/) as HTMLInputElement).checked).toBe(false);
  });
});

/**
 * "Fill from ~/.ssh/config" against a real core reading a real file (POVDESK_SSH_CONFIG): choosing
 * a host fills the new profile's fields as ssh would resolve them, jump hosts included, and the
 * profile saved from it holds them; a ProxyCommand host is flagged, skipped lines are counted.
 */
describe('Terminals page: a profile filled from ~/.ssh/config, signing in with the SSH agent', () => {
  let core: Core;
  const dir = mkdtempSync(join(tmpdir(), 'ssh-config-ui-'));
  const config = join(dir, 'config');
  writeFileSync(
    config,
    `Host lab-web
  HostName 10.20.0.5
  User se
  Port 2222
  ProxyJump ops@bastion
  ServerAliveInterval 40

Host bastion
  HostName bastion.example.com
  Port 2201

Host corp-box
  ProxyCommand nc -X connect -x proxy:3128 %h %p

Match host nothing
  User nobody
`,
  );

  beforeAll(async () => {
    core = await testCore({ POVDESK_SSH_CONFIG: config });
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    setTransport(null);
    await core?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fills name, address, user, port, jump hosts and keepalive; the saved profile holds them', async () => {
    render(<Profiles />);
    const form = () => screen.getByRole('form', { name: 'New profile' });
    const picker = await within(form()).findByLabelText(/^Fill from ~\/\.ssh\/config/);
    expect([...(picker as HTMLSelectElement).options].map((o) => o.value)).toEqual(['', 'lab-web', 'bastion', 'corp-box']);
    fireEvent.change(picker, { target: { value: 'lab-web' } });
    const value = (l: RegExp) => (within(form()).getByLabelText(l) as HTMLInputElement).value;
    expect([/^Name/, /^Host/, /^Port/, /^User/, /^Jump hosts/, /^Keepalive/].map(value)).toEqual([
      'lab-web',
      '10.20.0.5',
      '2222',
      'se',
      'ops@bastion.example.com:2201',
      '40',
    ]);
    expect(within(form()).queryByRole('status')).toBeNull();
    expect(within(form()).getByText(/1 line of .*config not read/)).toBeTruthy();

    fireEvent.change(picker, { target: { value: 'corp-box' } });
    expect(within(form()).getByRole('status').textContent).toMatch(
      /^ssh reaches corp-box through ProxyCommand \(nc -X connect -x proxy:3128 %h %p\), which POV Desk does not run/,
    );

    fireEvent.change(picker, { target: { value: 'lab-web' } });
    // the SSH agent: nothing to type, nothing stored
    fireEvent.change(within(form()).getByLabelText(/^Credentials/), { target: { value: 'agent' } });
    expect(within(form()).queryByLabelText(/^Password|^Private key/)).toBeNull();
    fireEvent.click(within(form()).getByRole('button', { name: 'Save profile' }));
    await screen.findByText('lab-web');
    expect(screen.getByText(/se@10\.20\.0\.5:2222 via ops@bastion\.example\.com:2201 · agent/)).toBeTruthy();
    const [saved] = (await core.dispatcher.call('ssh.profiles.list', {}, { transport: 'test' })) as SshProfile[];
    expect(saved).toMatchObject({
      name: 'lab-web',
      host: '10.20.0.5',
      port: 2222,
      username: 'se',
      keepaliveSec: 40,
      authKind: 'agent',
      publicKey: null,
      jump: [{ host: 'bastion.example.com', port: 2201, username: 'ops', profileId: null }],
    });

    // editing a profile offers no fill: it would overwrite what was saved
    fireEvent.click(screen.getByRole('button', { name: 'Edit lab-web' }));
    const edit = screen.getByRole('form', { name: 'Edit profile lab-web' });
    expect(within(edit).queryByLabelText(/^Fill from/)).toBeNull();
    expect((within(edit).getByLabelText(/^Credentials/) as HTMLSelectElement).selectedOptions[0]?.textContent).toBe(
      'Keep signing in with the SSH agent',
    );
  });
});
