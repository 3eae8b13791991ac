import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { VmsTab } from '../../../renderer/src/components/pov/vms-tab';
import type { PovVmView } from '../../../shared/contract/pov';

afterEach(cleanup);

const vm = (over: Partial<PovVmView>): PovVmView => ({
  vmId: '1',
  name: 'vm',
  osPlatform: 'linux',
  osOverride: null,
  os: 'linux',
  guestOs: 'ubuntu-64',
  ip: '10.0.0.10',
  hostname: 'vm',
  runstate: 'running',
  goneAt: null,
  network: null,
  published: [],
  ...over,
});

function row(name: string): HTMLElement {
  return screen.getByRole('cell', { name: new RegExp(`^${name}`) }).closest('tr') as HTMLElement;
}

describe('VMs tab: network and published services', () => {
  it("lists each VM's published services as guest port → public host:port beside its private IP, and flags a manual network", () => {
    render(
      <VmsTab
        onSetOs={async () => {}}
        vms={[
          vm({
            vmId: '1',
            name: 'win01',
            ip: '10.0.0.11',
            network: { name: 'Default Network', type: 'automatic' },
            published: [
              { internalPort: 3389, externalHost: 'services-uswest.skytap.com', externalPort: 17001 },
              { internalPort: 5986, externalHost: 'services-uswest.skytap.com', externalPort: 17002 },
            ],
          }),
          vm({ vmId: '2', name: 'BtPocLin01', network: { name: 'Lab Manual', type: 'manual' } }),
          vm({ vmId: '3', name: 'local01' }),
        ]}
      />,
    );
    expect(screen.getByRole('columnheader', { name: 'Published services' })).toBeTruthy();
    const win = row('win01');
    expect(
      within(win)
        .getAllByRole('listitem')
        .map((li) => li.textContent),
    ).toEqual(['3389 → services-uswest.skytap.com:17001', '5986 → services-uswest.skytap.com:17002']);
    expect(within(win).getByText('10.0.0.11')).toBeTruthy();
    expect(within(win).getByTestId('vm-network').textContent).toBe('Default Network (automatic)');

    const lin = row('BtPocLin01');
    expect(within(lin).getByTestId('vm-published').textContent).toBe('none');
    expect(within(lin).getByTestId('vm-network').textContent).toBe('Lab Manual manual');
    expect(within(lin).getByText('manual').className).toMatch(/warn/);

    // A platform that reports no network (a local POV) shows none.
    expect(within(row('local01')).queryByTestId('vm-network')).toBeNull();
  });
});
