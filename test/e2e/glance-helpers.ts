import type { Locator, Page } from '@playwright/test';
import { ControlPlaneDouble } from '../support/control-plane-double';
import { enrolGuestsWhenBootstrapped } from './guest-enrol';
import { EntitleDouble } from '../pam-doubles/entitle-double';
import { PasswordSafeDouble } from '../pam-doubles/password-safe-double';
import { PraDouble } from '../pam-doubles/pra-double';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test, type App } from './fixtures';

/**
 * For a spec's top level: the Skytap emulator with the demo seed and quick timings, started once
 * for the file, and the app env that signs in to it. Returns a getter for the running emulator.
 */
export function useDemoEmulator(): () => Emulator {
  let emu: Emulator | undefined;
  test.beforeAll(async () => {
    emu = await startEmulator({
      port: 0,
      seed: SEEDS.demo,
      timing: { createBusyMs: 200, runstateBusyMs: 200, deleteMs: 200, rateLimitedMs: 400 },
    });
  });
  test.afterAll(async () => {
    await emu?.close();
  });
  test.use({ appEnv: { SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token', POVDESK_SKYTAP_POLL_MS: '150' } });
  return () => {
    if (!emu) throw new Error('the demo emulator has not started (useDemoEmulator must be called at the top level of a spec)');
    return emu;
  };
}

/** Save the Skytap settings through the Settings form (the token comes from the app's env). */
export async function saveSkytapInUi(app: App, url: string): Promise<void> {
  await app.open('Settings');
  const form = app.page.getByRole('form', { name: 'Skytap credentials' });
  await form.getByLabel('Username').fill('demo');
  await form.getByLabel(/URL/).fill(url);
  await form.getByRole('button', { name: 'Save' }).click();
}

/** Create a POV through the New POV dialog and wait for its row to show it running. */
export async function createPovInUi(page: Page, template: RegExp, name: string): Promise<Locator> {
  await page.getByRole('button', { name: 'New POV' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create POV' });
  await dialog.getByRole('option', { name: template }).click();
  await dialog.getByLabel('POV name').fill(name);
  await dialog.getByRole('button', { name: 'Create' }).click();
  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name, exact: true }) });
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });
  return row;
}

export interface AccessDoubles {
  cp: ControlPlaneDouble;
  pra: PraDouble;
  ps: PasswordSafeDouble;
  en: EntitleDouble;
  stop(): Promise<void>;
}

/** The control-plane and BeyondTrust doubles on loopback, with the accounts the specs use. */
export async function startAccessDoubles(): Promise<AccessDoubles> {
  const [cp, pra, ps, en] = await Promise.all([
    new ControlPlaneDouble().start(),
    new PraDouble().start(),
    new PasswordSafeDouble().start(),
    new EntitleDouble().start(),
  ]);
  pra.addApiAccount('ui-api', 'ui-pra-secret-91c2');
  ps.apiKeys.set('ui-ps-key-55e0', { runAs: 'svc', password: null });
  en.addIntegration('PRA', 'BeyondTrust Privileged Remote Access');
  cp.onContainer = (_a, _n, env) => void pra.checkIn(env.DEPLOY_KEY!, { hostname: 'control-node', private_ip: '10.0.0.1' });
  return { cp, pra, ps, en, stop: async () => void (await Promise.all([cp.stop(), pra.stop(), ps.stop(), en.stop()])) };
}

/** Stands in for the template runner in the guest: enrols every agent whose bootstrap landed in user_data. */
export function enrolGuests(emu: Emulator, cp: ControlPlaneDouble): () => void {
  const t = enrolGuestsWhenBootstrapped(emu, cp);
  return () => clearInterval(t);
}
