import { _electron, expect, test, type ElectronApplication, type Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { electronBinary } from './fixtures';
import { ROOT } from './host-process';
import { missingHostTools, stopManager } from './local-vm-helpers';

/**
 * The desktop habits in the real Electron (main/electron/desktop.ts); their decisions are
 * unit-tested in test/desktop/. Electron-only: each test skips itself with the reason where no
 * Electron binary exists (the development machines), and runs under Xvfb in the release workflow.
 */
const bin = electronBinary();
const reason = 'reason' in bin ? bin.reason : null;

async function launch(home: string, extraArgs: string[] = []): Promise<{ app: ElectronApplication; page: Page }> {
  const app = await _electron.launch({
    executablePath: (bin as { path: string }).path,
    args: [join(ROOT, 'out', 'main', 'index.js'), '--no-sandbox', '--disable-gpu', ...extraArgs],
    env: { ...process.env, POVDESK_HOME: home, POVDESK_NO_UPDATES: '1' } as Record<string, string>,
  });
  const page = await app.firstWindow();
  await page.waitForLoadState('domcontentloaded');
  return { app, page };
}

/** Replaces dialog.showMessageBox in the main process: records the question, answers `response` after `delayMs`. */
async function answerDialogs(app: ElectronApplication, response: number, delayMs = 0): Promise<void> {
  await app.evaluate(
    ({ dialog }, [r, d]) => {
      const g = globalThis as unknown as { asked: unknown[] };
      g.asked = [];
      dialog.showMessageBox = (async (...a: unknown[]) => {
        g.asked.push(a[a.length - 1]);
        await new Promise((res) => setTimeout(res, d));
        return { response: r, checkboxChecked: false };
      }) as typeof dialog.showMessageBox;
    },
    [response, delayMs] as const,
  );
}

const asked = (app: ElectronApplication) => app.evaluate(() => (globalThis as unknown as { asked: { message: string }[] }).asked);

test.describe('desktop habits (Electron)', () => {
  test.skip(reason !== null, reason ?? '');
  let home = '';
  test.beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'povdesk-desktop-'));
  });
  test.afterEach(async () => {
    await stopManager(home).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  });

  test('window size, position and last page come back after a restart', async () => {
    let { app, page } = await launch(home);
    await page.getByRole('button', { name: 'Settings' }).click();
    await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows()[0]!.setBounds({ x: 40, y: 60, width: 1100, height: 700 }));
    await page.waitForTimeout(800); // the state is saved 500 ms after the last move
    await answerDialogs(app, 0);
    await app.close();
    ({ app, page } = await launch(home));
    const bounds = await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows()[0]!.getBounds());
    expect(bounds).toMatchObject({ width: 1100, height: 700 });
    expect(page.url()).toMatch(/#\/settings$/);
    await expect(page.getByRole('button', { name: 'Settings' })).toHaveAttribute('aria-current', 'page');
    await app.close();
  });

  test('closing the window keeps the app running in the tray; Quit with no VM running does not ask', async () => {
    const { app, page } = await launch(home);
    await answerDialogs(app, 2);
    const hasTray = await app.evaluate(({ Tray }) => typeof Tray === 'function');
    expect(hasTray).toBe(true);
    await page.close();
    await new Promise((r) => setTimeout(r, 500));
    expect(app.process().exitCode).toBeNull(); // still running (Xvfb's tray or macOS)
    const exited = new Promise((r) => app.process().once('exit', r));
    await app.evaluate(({ app: a }) => a.quit());
    await exited;
    expect(await asked(app).catch(() => [])).toEqual([]);
  });

  test('a povdesk://pov/<id> link on the command line opens that POV; start at login is off by default', async () => {
    const { app, page } = await launch(home, ['povdesk://pov/pov-123']);
    await expect.poll(() => page.url()).toMatch(/#\/povs\/pov-123$/);
    await expect(page.getByRole('button', { name: 'POVs' })).toHaveAttribute('aria-current', 'page');
    if (process.platform !== 'linux') expect(await app.evaluate(({ app: a }) => a.getLoginItemSettings().openAtLogin)).toBe(false);
    await answerDialogs(app, 0);
    await app.close();
  });

  test(
    'quitting with a VM running asks keep/stop: keep leaves it running for the next launch, stop stops it; the taskbar shows job ' +
      'progress',
    async () => {
      test.skip(missingHostTools.length > 0 && process.env.CI !== 'true', `missing ${missingHostTools.join(', ')}`);
      test.setTimeout(300_000);
      let { app, page } = await launch(home);
      await app.evaluate(({ BrowserWindow }) => {
        const w = BrowserWindow.getAllWindows()[0]!;
        const g = globalThis as unknown as { progress: number[] };
        g.progress = [];
        const orig = w.setProgressBar.bind(w);
        w.setProgressBar = (v: number, o?: Electron.ProgressBarOptions) => {
          g.progress.push(v);
          orig(v, o);
        };
      });
      await page.getByRole('button', { name: 'Local VMs' }).click();
      await page.getByRole('button', { name: 'Build the test image' }).click();
      const form = page.getByRole('form', { name: 'Create VM' });
      await expect(form).toBeVisible({ timeout: 60_000 });
      await form.getByPlaceholder('demo-1').fill('quit-keep');
      await form.getByRole('button', { name: 'Create' }).click();
      const state = () => page.locator('tr[data-vm="quit-keep"]').getByTestId('vm-state');
      await expect(state()).toHaveText('ready', { timeout: 180_000 });
      const progress = await app.evaluate(() => (globalThis as unknown as { progress: number[] }).progress);
      expect(progress.some((v) => v >= 0)).toBe(true); // a job showed on the taskbar
      expect(progress.at(-1)).toBe(-1); // and the bar went away when it ended

      await answerDialogs(app, 0, 2000); // Keep them running
      let exited = new Promise((r) => app.process().once('exit', r));
      await app.evaluate(({ app: a }) => a.quit());
      await expect.poll(async () => (await asked(app)).map((q) => q.message)).toEqual(['1 local VM is running (quit-keep).']);
      await exited;
      ({ app, page } = await launch(home));
      await page.getByRole('button', { name: 'Local VMs' }).click();
      await expect(state()).toHaveText('ready', { timeout: 30_000 });

      await answerDialogs(app, 1, 2000); // Stop them and quit
      exited = new Promise((r) => app.process().once('exit', r));
      await app.evaluate(({ app: a }) => a.quit());
      await expect.poll(async () => (await asked(app)).length).toBe(1);
      await exited;
      ({ app, page } = await launch(home));
      await page.getByRole('button', { name: 'Local VMs' }).click();
      await expect(state()).toHaveText('stopped', { timeout: 30_000 });
      await answerDialogs(app, 0);
      await app.close();
    },
  );
});
