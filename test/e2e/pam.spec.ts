import { ControlPlaneDouble } from '../support/control-plane-double';
import { EntitleDouble } from '../pam-doubles/entitle-double';
import { PasswordSafeDouble } from '../pam-doubles/password-safe-double';
import { PraDouble } from '../pam-doubles/pra-double';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';
import { enrolGuestsWhenBootstrapped } from './guest-enrol';

/**
 * The Access panel in Chromium against the real host (browser mode): a POV with one Linux control
 * node and one Windows VM on the Skytap emulator, its agent enrolled through the control-plane
 * double, tenants typed into the panel, Wire, then Destroy — against the PRA, Password Safe and
 * Entitle doubles on loopback in this test process, which end empty.
 */
let emu: Emulator;
let cp: ControlPlaneDouble;
let pra: PraDouble;
let ps: PasswordSafeDouble;
let en: EntitleDouble;
let guest: NodeJS.Timeout | null = null;
test.beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    seed: SEEDS.demo,
    timing: { createBusyMs: 300, runstateBusyMs: 300, deleteMs: 300, rateLimitedMs: 600 },
  });
  emu.state.addTemplate({
    name: 'Access two VMs',
    vms: [
      { name: 'control-node', guestOS: 'ubuntu-64' },
      { name: 'win-broker', guestOS: 'windows2019srv-64' },
    ],
  });
  [cp, pra, ps, en] = await Promise.all([
    new ControlPlaneDouble().start(),
    new PraDouble().start(),
    new PasswordSafeDouble().start(),
    new EntitleDouble().start(),
  ]);
  pra.addApiAccount('ui-api', 'ui-pra-secret-91c2');
  ps.apiKeys.set('ui-ps-key-55e0', { runAs: 'svc', password: null });
  en.addIntegration('PRA', 'BeyondTrust Privileged Remote Access');
  cp.onContainer = (_a, _n, env) => void pra.checkIn(env.DEPLOY_KEY!, { hostname: 'control-node', private_ip: '10.0.0.1' });
});
test.afterAll(async () => {
  if (guest) clearInterval(guest);
  await Promise.all([cp.stop(), pra.stop(), ps.stop(), en.stop()]);
  await emu.close();
});

test.use({ appEnv: { SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token', POVDESK_SKYTAP_POLL_MS: '150' } });

test('tenants typed into the Access panel, Wire: Gateway connected, a row per VM, broker verified; Destroy empties every tenant', async ({
  app,
}) => {
  const { page } = app;
  await app.call('settings.saveSkytap', { username: 'demo', url: emu.url });
  await app.call('controlNode.saveSettings', {
    controlPlaneUrl: cp.url,
    token: cp.token,
    agentImage: 'registry.example.com/povdesk/agent:1',
  });
  const tpl = [...emu.state.templates.values()].find((t) => t.name === 'Access two VMs')!;
  await app.call('pov.create', { templateId: tpl.id, name: 'Access eval' });
  guest = enrolGuestsWhenBootstrapped(emu, cp);
  await app.open('POVs');
  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Access eval', exact: true }) });
  await expect(row.getByTestId('cn-status')).toHaveText('enrolled', { timeout: 60_000 });
  await page.getByRole('button', { name: 'Access eval', exact: true }).click();

  await app.call('pam.saveSettings', { gatewayImage: 'registry.example.test/bt/jumpoint:25.2', connectTimeoutSec: 20 });
  const form = page.getByRole('form', { name: 'Tenants' });
  await form.getByLabel('PRA site').fill(pra.url);
  await form.getByLabel('API client id').fill('ui-api');
  await form.getByLabel('API client secret').fill('ui-pra-secret-91c2');
  await form.getByLabel('Password Safe URL').fill(ps.url);
  await form.getByLabel('Run-as user').fill('svc');
  await form.getByLabel('API key').fill('ui-ps-key-55e0');
  await form.getByLabel('Entitle API URL').fill(en.url);
  await form.getByLabel('Entitle API token').fill(en.token);
  await form.getByLabel('Resource Broker install key').fill('ui-broker-key-7d1f');
  await form.getByRole('button', { name: 'Save tenants' }).click();
  await expect(form.getByText('Saved.')).toBeVisible();
  await form.getByRole('button', { name: 'Test PRA' }).click();
  await expect(form.getByLabel('PRA test result')).toContainText('ok: Connected');

  await page.getByRole('button', { name: 'Wire', exact: true }).click();
  await expect(page.getByLabel('POV Gateway', { exact: true })).toContainText('connected', { timeout: 30_000 });
  await expect(page.getByLabel('wiring job', { exact: true })).toContainText('succeeded', { timeout: 30_000 });
  await expect(page.getByLabel('access control-node')).toContainText('shell jump');
  await expect(page.getByLabel('access win-broker')).toContainText('remote RDP');
  await expect(page.getByLabel('Resource Broker', { exact: true })).toContainText('broker: verified — win-broker');
  expect([
    pra.store['shell-jump'].size,
    pra.store['remote-rdp'].size,
    ps.assets.size,
    ps.systems.size,
    en.resources.size,
    cp.containers.size,
  ]).toEqual([1, 1, 2, 2, 1, 1]);

  const povId = ((await app.call('pov.list', {})) as { povs: { id: string }[] }).povs[0]!.id;
  const d = (await app.call('pov.destroy', { id: povId })) as { jobId: string };
  await expect
    .poll(async () => ((await app.call('jobs.get', { id: d.jobId })) as { job: { state: string } }).job.state, { timeout: 60_000 })
    .toBe('succeeded');
  expect(pra.count() + ps.count() + en.resources.size + cp.containers.size).toBe(0);
});
