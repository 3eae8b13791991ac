import { ControlPlaneDouble } from '../support/control-plane-double';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';
import { enrolGuestsWhenBootstrapped } from './guest-enrol';

/**
 * The Control node column in Chromium against the real host (browser mode), the Skytap emulator
 * and the control-plane double, both on loopback in this test process. A POV from a template with
 * two Linux VMs shows `none` with the reason; name VM picks one; Install control node ends with
 * the Ed25519 label; Destroy revokes the agent. A "guest" loop here stands in for the template
 * runner and the agent: it reads the VM's user_data in the emulator and enrols the agent named.
 */
let emu: Emulator;
let cp: ControlPlaneDouble;
let guest: NodeJS.Timeout | null = null;
test.beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    seed: SEEDS.demo,
    timing: { createBusyMs: 300, runstateBusyMs: 300, deleteMs: 300, rateLimitedMs: 600 },
  });
  cp = await new ControlPlaneDouble().start();
});
test.afterAll(async () => {
  if (guest) clearInterval(guest);
  await cp.stop();
  await emu.close();
});

test.use({ appEnv: { SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token', POVDESK_SKYTAP_POLL_MS: '150' } });

test('two Linux VMs: none, with the reason; name VM, then Install control node ends with the Ed25519 label; Destroy revokes agent', async ({
  app,
}) => {
  const { page } = app;
  await app.open('Settings');
  await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel('Username').fill('demo');
  await page.getByRole('form', { name: 'Skytap credentials' }).getByLabel(/URL/).fill(emu.url);
  await page.getByRole('form', { name: 'Skytap credentials' }).getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Connected' })).toContainText('3 templates');
  const saved = (await app.call('controlNode.saveSettings', {
    controlPlaneUrl: cp.url,
    token: cp.token,
    agentImage: 'registry.example.com/povdesk/agent:1',
  })) as { tokenSet: boolean };
  expect(saved.tokenSet).toBe(true);

  await app.open('POVs');
  await page.getByRole('button', { name: 'New POV' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create POV' });
  await dialog.getByLabel('Search templates').fill('PAM POV');
  await dialog.getByRole('option', { name: /PAM POV/ }).click();
  await dialog.getByLabel('POV name').fill('Umbrella eval');
  await dialog.getByRole('button', { name: 'Create' }).click();
  await expect(dialog).toBeHidden();

  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Umbrella eval', exact: true }) });
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });
  const cn = row.getByTestId('control-node');
  await expect(cn.getByTestId('cn-vm')).toHaveText('none', { timeout: 15_000 });
  await expect(cn.getByTestId('cn-reason')).toContainText('candidates: control-node, rhel-target');
  await expect(row).not.toContainText('Provisioning stopped');
  expect(cp.agents.size).toBe(0);

  await cn.getByRole('button', { name: 'name VM for Umbrella eval' }).click();
  const naming = page.getByRole('dialog', { name: 'Control node VM for Umbrella eval' });
  await naming.getByLabel('Control node VM name').fill('control-node');
  await naming.getByRole('button', { name: 'Save' }).click();
  await expect(naming.getByRole('status')).toContainText('Control node: control-node');
  await naming.getByRole('button', { name: 'Close' }).click();
  await expect(cn.getByTestId('cn-vm')).toHaveText('control-node');
  await expect(cn.getByTestId('cn-reason')).toHaveCount(0);

  // the guest: once a bootstrap shows up in a VM's user_data, its agent enrols
  guest = enrolGuestsWhenBootstrapped(emu, cp);
  await cn.getByRole('button', { name: 'Install control node for Umbrella eval' }).click();
  // the install reads enrolment every 10 s
  await expect(cn.getByTestId('cn-mode')).toHaveText('Ed25519', { timeout: 40_000 });
  await expect(cn.getByTestId('cn-status')).toHaveText('enrolled');
  const [agent] = [...cp.agents.values()];
  expect(agent!.state).toBe('enrolled');
  const env = [...emu.state.environments.values()][0]!;
  expect(env.vms.find((v) => v.name === 'control-node')!.userData).toBe(''); // cleared once enrolled

  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Destroy Umbrella eval' }).click();
  await expect(page.getByRole('button', { name: 'Umbrella eval', exact: true })).toHaveCount(0, { timeout: 30_000 });
  expect(emu.state.environmentIds()).toEqual([]);
  expect(agent!.state).toBe('revoked');
});
