import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { VmConnection } from '../../../shared/contract/vm';
import { PovList } from '../../../renderer/src/components/pov/pov-list';
import { fakeRows } from './rows';

const NOW = Date.parse('2026-12-01T03:00:00Z');
afterEach(cleanup);

const connection = (mode: 'local' | 'remote'): VmConnection => ({
  mode,
  url: mode === 'remote' ? 'https://vm.example.test:8443' : null,
  auth: 'token',
  tokenSet: mode === 'remote',
  oidcIssuer: null,
  oidcClientId: null,
  caBundle: null,
  pid: null,
  stateDir: null,
});

function labels(): string[] {
  return screen
    .getAllByRole('row')
    .slice(1)
    .map((r) => within(r).getByTestId('pov-platform').textContent!);
}

describe('POV rows show their lab platform', () => {
  const rows = fakeRows(2).map((r, i) => (i === 1 ? { ...r, platform: 'local', envId: 'povdesk-0000000p' } : r));

  it('Skytap, and This laptop for a local POV while the app uses its own vm-manager', () => {
    render(<PovList povs={rows} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} connection={connection('local')} />);
    expect(labels()).toEqual(['Skytap', 'This laptop']);
    // a local POV's name is not described as a Skytap environment
    expect(screen.getByRole('button', { name: 'POV 1' }).getAttribute('title')).toBe('POV 1');
    // Suspend on a local POV says what it is (the vm-manager's stop), as the registry does
    expect(screen.getByRole('button', { name: 'Suspend POV 1' }).getAttribute('title')).toMatch(/^Suspend is the vm-manager's stop/);
    expect(screen.getByRole('button', { name: 'Suspend POV 0' }).getAttribute('title')).toBeNull();
  });

  it('Remote vm-manager for a local POV while the app is connected to a remote one', () => {
    render(<PovList povs={rows} jobs={{}} now={NOW} onOpen={() => {}} onAction={() => {}} connection={connection('remote')} />);
    expect(labels()).toEqual(['Skytap', 'Remote vm-manager']);
  });
});
