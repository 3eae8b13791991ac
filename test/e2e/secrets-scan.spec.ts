import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { expect, test } from './fixtures';

/**
 * Issue 10 item 9: every secret the app holds — the Skytap API token, the control-plane token
 * (saved and from the environment), the remote vm-manager token, the launch token — is entered
 * and used the way a person does it, then the app's home (logs, database, WAL), its output and
 * Copy diagnostics are scanned byte for byte.
 */
const secret = (name: string) => `${name}-${randomBytes(12).toString('hex')}`;
const SKYTAP = secret('skytap');
const CONTROL_PLANE = secret('cp');
const CONTROL_PLANE_ENV = secret('cpenv');
const REMOTE_VM = secret('vmremote');

let emu: Emulator;
test.beforeAll(async () => {
  emu = await startEmulator({ port: 0, credentials: { username: 'demo', token: SKYTAP } });
});
test.afterAll(async () => {
  await emu.close();
  // The keychain is the user's, not the home's: leave it as found, so a later spec that starts
  // from "token not set" (settings.spec) does not see this spec's tokens.
  try {
    execFileSync('secret-tool', ['clear', 'service', 'povdesk']);
  } catch {
    /* no keyring in this run: nothing was stored there */
  }
});
test.use({ appEnv: { POVDESK_CONTROL_PLANE_TOKEN: CONTROL_PLANE_ENV } });

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    const st = statSync(p);
    return st.isDirectory() ? filesUnder(p) : st.isFile() ? [p] : [];
  });
}

test('no secret the app holds reaches its files (the support bundle among them), its output or Copy diagnostics', async ({ app }) => {
  const { page } = app;
  await app.open('Settings');
  const skytap = page.getByRole('form', { name: 'Skytap credentials' });
  await skytap.getByLabel('Username').fill('demo');
  await skytap.getByLabel(/URL/).fill(emu.url);
  await skytap.getByLabel('API token').fill(SKYTAP);
  await skytap.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('token-status')).toHaveText('token set');
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('button', { name: 'Test connection' })).toBeEnabled({ timeout: 30_000 });
  expect(emu.requests.some((r) => r.auth?.token === SKYTAP)).toBe(true);

  const cn = page.getByRole('form', { name: 'Control node settings' });
  await cn.getByLabel('Control-plane URL').fill('https://127.0.0.1:9'); // loopback: Check my accounts below reads it
  await cn.getByLabel('Control-plane token').fill(CONTROL_PLANE);
  await cn.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByText('Saved. The next Install control node uses these settings.')).toBeVisible();

  await app.open('Local VMs');
  await page.locator('details.vm-connection summary').click();
  await page.getByLabel('Remote URL').fill('http://127.0.0.1:9');
  await page.getByRole('textbox', { name: 'Bearer token' }).fill(REMOTE_VM);
  await page.getByRole('button', { name: 'Use remote' }).click();
  await expect(page.locator('details.vm-connection summary')).toContainText('remote http://127.0.0.1:9');
  // A call through the remote manager fails (nothing listens there) and is logged.
  await app.call('vm.list', {}).catch(() => undefined);

  // Settings → Check my accounts → Save support bundle: the file is under the home, scanned below.
  await app.open('Settings');
  await page.getByRole('button', { name: 'Save support bundle' }).click();
  const bundle = (await page.getByTestId('bundle-path').textContent({ timeout: 60_000 }))!;
  expect(bundle.startsWith(app.home)).toBe(true);

  const diagnostics = ((await app.call('app.diagnostics', {})) as { text: string }).text;
  // Browser mode only: Electron has no launch token.
  const launchToken = /#token=([A-Za-z0-9_-]+)/.exec(app.url)?.[1];
  const held: Record<string, string> = {
    ...(launchToken ? { launchToken } : {}),
    skytap: SKYTAP,
    'skytap basic auth': Buffer.from(`demo:${SKYTAP}`).toString('base64'),
    controlPlane: CONTROL_PLANE,
    controlPlaneEnv: CONTROL_PLANE_ENV,
    remoteVm: REMOTE_VM,
  };
  const found: string[] = [];
  const files = filesUnder(app.home);
  expect(files.some((f) => f.endsWith('povdesk.db'))).toBe(true);
  expect(files).toContain(bundle);
  for (const f of files) {
    const bytes = readFileSync(f);
    for (const [name, value] of Object.entries(held)) if (bytes.includes(Buffer.from(value))) found.push(`${name} in ${f}`);
  }
  for (const [name, value] of Object.entries(held)) {
    if (diagnostics.includes(value)) found.push(`${name} in Copy diagnostics`);
    // The host prints its own URL with the launch token on stdout, for the person who started it.
    if (name !== 'launchToken' && app.output().includes(value)) found.push(`${name} in the app's output`);
  }
  expect(found).toEqual([]);
});
