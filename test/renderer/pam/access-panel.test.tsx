import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { setTransport } from '../../../renderer/src/api';
import { AccessPanel } from '../../../renderer/src/components/pam/access-panel';
import { BROKER_UNVERIFIED } from '../../../main/services/pam/service';
import { inventory, pamWorld, type PamWorld } from '../../pam/world';
import { coreTransport } from '../core-transport';

/**
 * The Access panel against the real core (its Dispatcher and stream hub): SQLite, the Skytap emulator with an enrolled control
 * node, the control-plane double and the PRA / Password Safe / Entitle doubles. Wire from the UI,
 * Test a tenant, then Unwire.
 */
let p: PamWorld | undefined;
afterEach(async () => {
  cleanup();
  setTransport(null);
  await p?.close();
  p = undefined;
});

describe('Access panel', () => {
  it('Wire shows the Gateway connected, the broker, and a row per VM; Test answers per product; Unwire empties the tenants', async () => {
    p = await pamWorld();
    setTransport(coreTransport(p.w.core));
    render(<AccessPanel povId={p.povId} />);
    const gateway = await screen.findByLabelText('POV Gateway');
    expect(gateway.textContent).toMatch(/pending/);
    expect(screen.getByLabelText('Resource Broker').textContent).toBe('broker: not installed');
    expect(screen.getByText(/SSH integration: off: .*Kubernetes/)).toBeTruthy();
    expect((screen.getByLabelText('API client secret') as HTMLInputElement).value).toBe(''); // write-only
    expect(screen.getAllByText('(set; blank keeps it)').length).toBeGreaterThanOrEqual(3);

    fireEvent.click(screen.getByRole('button', { name: 'Wire' }));
    await waitFor(() => expect(screen.getByLabelText('POV Gateway').textContent).toMatch(/connected.*node control-node/), {
      timeout: 20_000,
    });
    await waitFor(() => expect(screen.getByLabelText('wiring job').textContent).toMatch(/succeeded/), { timeout: 20_000 });
    const linux = screen.getByLabelText('access control-node');
    const win = screen.getByLabelText('access win-broker');
    expect(within(linux).getByText('shell jump')).toBeTruthy();
    expect(within(win).getByText('remote RDP')).toBeTruthy();
    expect(within(win).getByText(/requestable through the jump group/)).toBeTruthy();
    expect(screen.getByLabelText('Resource Broker').textContent).toMatch(/^broker: verified — win-broker/);
    expect(inventory(p).shellJumps + inventory(p).rdps).toBe(2);

    fireEvent.click(screen.getByRole('button', { name: 'Test PRA' }));
    expect((await screen.findByLabelText('PRA test result', {}, { timeout: 10_000 })).textContent).toMatch(/^ok: Connected/);
    p.ps.denied.add('Workgroups');
    fireEvent.click(screen.getByRole('button', { name: 'Test Password Safe' }));
    expect((await screen.findByLabelText('Password Safe test result', {}, { timeout: 10_000 })).textContent).toMatch(/^permission_missing/);

    p.ps.denied.clear();
    fireEvent.click(screen.getByRole('button', { name: 'Unwire' }));
    await waitFor(() => expect(screen.getByLabelText('wiring job').textContent).toMatch(/Unwire .*: succeeded/), { timeout: 20_000 });
    expect(Object.values(inventory(p)).every((n) => n === 0)).toBe(true);
    await waitFor(() => expect(screen.getByLabelText('POV Gateway').textContent).toMatch(/pending/));
  }, 60_000);

  it('the broker reads exactly "broker: unverified — check the portal" until Password Safe answers', async () => {
    p = await pamWorld();
    // Password Safe refuses the run-as user: the installer was asked for, nothing answered for an asset.
    p.ps.apiKeys.clear();
    setTransport(coreTransport(p.w.core));
    render(<AccessPanel povId={p.povId} />);
    await screen.findByLabelText('POV Gateway');
    fireEvent.click(screen.getByRole('button', { name: 'Wire' }));
    await waitFor(() => expect(screen.getByLabelText('wiring job').textContent).toMatch(/failed/), { timeout: 20_000 });
    await waitFor(() => expect(screen.getByLabelText('Resource Broker').textContent).toBe(BROKER_UNVERIFIED));
    expect(screen.getAllByText(/Password Safe refused the sign-in/).length).toBeGreaterThan(0);
    expect(screen.getAllByRole('button', { name: 'Retry' }).length).toBeGreaterThan(0);
  }, 60_000);
});
