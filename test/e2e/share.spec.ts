import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { expect, test } from './fixtures';

/**
 * Hand a POV to the customer, in Chromium against the real host and the Skytap emulator: create
 * a POV (the dialog shows the auto-delete time), create a share link, copy the handout, extend and
 * revoke it; then move the auto-delete time inside the last ladder step and see the warning as a
 * toast, in the notification list, and as a Web Notification (permission granted to the page).
 */
let emu: Emulator;
test.beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    seed: SEEDS.demo,
    timing: { createBusyMs: 300, runstateBusyMs: 300, deleteMs: 300, rateLimitedMs: 600 },
  });
});
test.afterAll(async () => {
  await emu.close();
});

test.use({ appEnv: { SKYTAP_USERNAME: 'demo', SKYTAP_API_TOKEN: 'demo-token', POVDESK_SKYTAP_POLL_MS: '150' } });

function localInput(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

test('share link, handout, extend, revoke, and a ladder warning', async ({ app }) => {
  test.skip(
    app.mode !== 'browser',
    'Web Notifications and the clipboard are checked in browser mode; Electron shows OS notifications instead',
  );
  const { page } = app;
  const origin = new URL(app.url).origin;
  await page.context().grantPermissions(['notifications', 'clipboard-read', 'clipboard-write'], { origin });
  // record Web Notifications the page creates (headless Chromium shows none on screen)
  await page.evaluate(() => {
    const seen: { title: string; requireInteraction: boolean }[] = [];
    (window as unknown as { __notes: typeof seen }).__notes = seen;
    const Real = window.Notification;
    class Recording extends Real {
      constructor(title: string, opts?: NotificationOptions) {
        super(title, opts);
        seen.push({ title, requireInteraction: opts?.requireInteraction ?? false });
      }
    }
    Object.defineProperty(window, 'Notification', { value: Recording, configurable: true });
  });

  await app.open('Settings');
  const form = page.getByRole('form', { name: 'Skytap credentials' });
  await form.getByLabel('Username').fill('demo');
  await form.getByLabel(/URL/).fill(emu.url);
  await form.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Connected' })).toContainText('3 templates');

  await app.open('POVs');
  await page.getByRole('button', { name: 'New POV' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create POV' });
  await dialog.getByRole('option', { name: /Windows AD lab/ }).click();
  await dialog.getByLabel('POV name').fill('Globex eval');
  // the auto-delete time defaults to 30 days from now
  await expect(dialog.getByLabel('Auto-delete')).not.toHaveValue('');
  expect((await dialog.getByLabel('Auto-delete').inputValue()).slice(0, 10)).toBe(localInput(Date.now() + 30 * 86_400_000).slice(0, 10));
  await dialog.getByRole('button', { name: 'Create' }).click();
  const row = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Globex eval', exact: true }) });
  await expect(row.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });

  await page.getByRole('button', { name: 'Globex eval', exact: true }).click();
  const auto = page.getByRole('region', { name: 'Auto-delete' });
  await expect(auto).toContainText('schedule armed');
  expect(emu.sharing.schedules.size).toBe(1);

  const share = page.getByRole('region', { name: 'Share' });
  await share.getByRole('button', { name: 'Create share link' }).click();
  const link = share.getByTestId('share-link');
  await expect(link).toContainText('/desktops');
  const password = (await link.getByLabel('Share password').textContent())!.trim();
  expect(password).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){4}$/);
  expect(emu.sharing.passwordsReceived).toEqual([password]);

  await share.getByLabel('Customer time zone').fill('America/Chicago');
  await link.getByRole('button', { name: 'Copy handout' }).click();
  const handout = await page.evaluate(() => navigator.clipboard.readText());
  expect(handout).toContain(password);
  expect(handout).toMatch(/Link: +http:\/\/127\.0\.0\.1:\d+\/vms\/[0-9a-f]+\/desktops/);
  expect(handout).toMatch(/Available until: .*C[SD]T/);

  // extend (here: move) the link's expiry to 3 days from now
  await share.getByLabel('Share link expiry').fill(localInput(Date.now() + 3 * 86_400_000));
  await link.getByRole('button', { name: 'Extend to the expiry below' }).click();
  await expect(link).toContainText(/Expires in 3 days/);

  page.once('dialog', (d) => void d.accept());
  await link.getByRole('button', { name: 'Revoke' }).click();
  await expect(share.getByTestId('share-link')).toHaveCount(0);
  await expect(share).toContainText('1 earlier link(s) revoked');
  expect(emu.sharing.portals.size).toBe(0);

  // the auto-delete time moved to 50 minutes from now: the last ladder step is due at once
  await auto.getByLabel('New auto-delete time').fill(localInput(Date.now() + 50 * 60_000));
  await auto.getByRole('button', { name: 'Extend' }).click();
  const toast = page.getByTestId('toast').filter({ hasText: 'Globex eval' });
  await expect(toast).toContainText(/is deleted in \d+ minutes/);
  await expect(page.getByTestId('toast')).toHaveCount(1);
  const notes = await page.evaluate(() => (window as unknown as { __notes: { title: string; requireInteraction: boolean }[] }).__notes);
  expect(notes).toHaveLength(1);
  expect(notes[0]).toMatchObject({ requireInteraction: true });
  expect(notes[0]!.title).toMatch(/Globex eval/);
  await page.getByRole('button', { name: /Notifications \(\d+ unread\)/ }).click();
  await expect(page.getByRole('region', { name: 'Notifications' }).getByTestId('notification').first()).toContainText('urgent');
  // clicking the warning opens the POV with the auto-delete time focused
  await page.getByRole('region', { name: 'Notifications' }).getByTestId('notification').first().getByRole('button').click();
  await expect(page.getByLabel('New auto-delete time')).toBeFocused();
});

test('Electron: a ladder warning reaches the main process notifier and the in-app toast', async ({ app }) => {
  test.skip(app.mode !== 'electron', 'Electron only: main/electron/notifications.ts shows OS notifications from the main process');
  const { page } = app;
  await app.call('settings.saveSkytap', { username: 'demo', apiToken: 'demo-token', url: emu.url });
  const { templates } = (await app.call('skytap.listTemplates', {})) as { templates: { id: string }[] };
  const at = new Date(Date.now() + 50 * 60_000).toISOString();
  await app.call('pov.create', { templateId: templates[0]!.id, name: 'Electron eval', autoDeleteAt: at });
  // the 1 h step is due at create: the main process shows it (critical, never timing out) and the
  // renderer shows the toast; a crash in the notifier would end the app and fail this wait
  await expect(page.getByTestId('toast').filter({ hasText: 'Electron eval' })).toContainText(/deleted in \d+ minutes/, { timeout: 30_000 });
  expect(app.output()).not.toMatch(/notifications\.(ts|js)/); // no stack through the notifier
});
