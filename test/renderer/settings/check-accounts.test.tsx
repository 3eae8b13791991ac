import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTransport } from '../../../renderer/src/api';
import CheckAccounts from '../../../renderer/src/pages/settings/check-accounts';
import type { Core } from '../../../main/core/create';
import { testCore } from '../../foundation/helpers';
import { SEEDS, startEmulator, type Emulator } from '../../skytap-emulator';
import { coreTransport } from '../core-transport';

/** Settings → Check my accounts against a real core and the Skytap emulator: the results in words, then the bundle's path. */
describe('Check my accounts', () => {
  let core: Core;
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ seed: SEEDS.demo });
    core = await testCore();
    await core.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
    setTransport(coreTransport(core));
  });
  afterAll(async () => {
    cleanup();
    await core.close();
    await emu.close();
  });

  it('lists each assumption with its result in words, a broken one contradicted; Save support bundle shows the file', async () => {
    emu.breaks.paging = true;
    render(<CheckAccounts />);
    fireEvent.click(screen.getByRole('button', { name: 'Check my accounts' }));
    const panel = screen.getByTestId('check-accounts');
    await waitFor(() => expect(within(panel).getByText(/\d+ confirmed, 1 contradicted, \d+ could not tell/)).toBeTruthy(), {
      timeout: 10_000,
    });
    const paging = [...panel.querySelectorAll('li')].find((li) => li.textContent?.includes('count/offset'))!;
    expect(paging.getAttribute('data-result')).toBe('contradicted');
    expect(paging.textContent).toMatch(/^contradicted.*asked for count=1/);
    const account = [...panel.querySelectorAll('li')].find((li) => li.textContent?.includes('username and API token authenticate'))!;
    expect(account.textContent).toMatch(/^confirmed/);
    fireEvent.click(screen.getByRole('button', { name: 'Save support bundle' }));
    const path = await screen.findByTestId('bundle-path', {}, { timeout: 10_000 });
    expect(path.textContent).toContain(core.base.home);
    expect(existsSync(path.textContent!)).toBe(true);
  }, 30_000);
});
