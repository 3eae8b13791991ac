import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';
import { enrolGuests, startAccessDoubles, type AccessDoubles } from './glance-helpers';

/**
 * One POV from "not ready" to "ready" in Chromium against the real host: the Skytap emulator, the
 * control-plane double (the agent enrols), the PRA / Password Safe / Entitle doubles (Wire), and
 * a share link. The row badge and the POV page's checklist follow each step.
 */
let emu: Emulator;
let d: AccessDoubles;
let stopGuests: (() => void) | null = null;
test.beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    seed: SEEDS.demo,
    timing: { createBusyMs: 300, runstateBusyMs: 300, deleteMs: 300, rateLimitedMs: 600 },
  });
  emu.state.addTemplate({
    name: 'Ready two VMs',
    vms: [
      { name: 'control-node', guestOS: 'ubuntu-64' },
      { name: 'win-broker', guestOS: 'windows2019srv-64' },
    ],
  });
  d = await startAccessDoubles();
});
test.afterAll(async () => {
  stopGuests?.();
  await d.stop();
  await emu.close();
});

test.use({ appEnv: { SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token', POVDESK_SKYTAP_POLL_MS: '150' } });

type Readiness = { overall: string; items: { key: string; state: string }[] };

test('a POV walks from not ready to ready: control node enrolled, wired, shared', async ({ app }, info) => {
  test.setTimeout(180_000);
  const { page } = app;
  const { cp, pra, ps, en } = d;
  await page.setViewportSize({ width: 1280, height: 800 });
  await app.call('settings.saveSkytap', { username: 'demo', url: emu.url });
  const tpl = [...emu.state.templates.values()].find((t) => t.name === 'Ready two VMs')!;
  // no control plane configured yet: the POV comes up without an agent
  await app.call('pov.create', { templateId: tpl.id, name: 'Walk eval' });
  await app.open('POVs');
  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Walk eval', exact: true }) });
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 60_000 });
  await expect(row.getByTestId('readiness')).toHaveText('not ready');
  const povId = ((await app.call('pov.list', {})) as { povs: { id: string }[] }).povs[0]!.id;
  const states = async () =>
    Object.fromEntries(((await app.call('pov.readiness', { id: povId })) as Readiness).items.map((i) => [i.key, i.state]));
  expect(await states()).toMatchObject({
    environment: 'ok',
    controlNode: 'not_configured',
    gateway: 'not_configured',
    share: 'not_ready',
    autoDelete: 'ok',
  });

  // the control node enrols through the control-plane double
  await app.call('controlNode.saveSettings', {
    controlPlaneUrl: cp.url,
    token: cp.token,
    agentImage: 'registry.example.com/povdesk/agent:1',
  });
  stopGuests = enrolGuests(emu, d.cp);
  await row.getByRole('button', { name: 'Install control node for Walk eval' }).click();
  await expect(row.getByTestId('cn-status')).toHaveText('enrolled', { timeout: 60_000 });
  await expect.poll(async () => (await states()).controlNode, { timeout: 10_000 }).toBe('ok');

  // tenants saved and wired against the doubles
  await app.call('pam.saveSettings', { gatewayImage: 'registry.example.test/bt/jumpoint:25.2', connectTimeoutSec: 20 });
  await app.call('pam.saveTenants', {
    povId,
    pra: { site: pra.url, clientId: 'ui-api', clientSecret: 'ui-pra-secret-91c2' },
    passwordSafe: { url: ps.url, runAs: 'svc', apiKey: 'ui-ps-key-55e0' },
    entitle: { url: en.url, token: en.token },
    brokerInstallKey: 'ui-broker-key-7d1f',
  });
  const wiring = (await app.call('pam.status', { povId })) as { jobId: string | null };
  const job = wiring.jobId ?? ((await app.call('pam.wire', { povId })) as { jobId: string }).jobId;
  await expect
    .poll(async () => ((await app.call('jobs.get', { id: job })) as { job: { state: string } }).job.state, { timeout: 60_000 })
    .toBe('succeeded');
  await expect.poll(async () => (await states()).gateway, { timeout: 10_000 }).toBe('ok');

  // the last missing piece: a share link, made on the POV page; the checklist turns ready
  await page.getByRole('button', { name: 'Walk eval', exact: true }).click();
  const list = page.getByTestId('readiness-checklist');
  await expect(list.getByTestId('readiness-overall')).toHaveText('not ready');
  await expect(list.locator('[data-item="share"]')).toContainText('Create a share link');
  await page.getByRole('region', { name: 'Share' }).getByRole('button', { name: 'Create share link' }).click();
  await expect(page.getByRole('region', { name: 'Share' }).getByTestId('share-link')).toContainText('/desktops');
  await list.getByRole('button', { name: 'Check again' }).click();
  await expect(list.getByTestId('readiness-overall')).toHaveText('ready');
  await page.screenshot({ path: info.outputPath('pov-page-ready.png'), fullPage: true });
  await page.getByRole('button', { name: '← POVs' }).click();
  await expect(row.getByTestId('readiness')).toHaveText('ready');
  await expect(row.getByTestId('pov-times')).toContainText(/link expires in \d+ d/);
  await page.screenshot({ path: info.outputPath('povs-ready.png'), fullPage: true });
});
