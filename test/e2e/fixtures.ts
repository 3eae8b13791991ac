import { _electron, test as base, type Browser, type BrowserType, type ElectronApplication, type Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WS_PATH, WS_PROTOCOL, WS_TOKEN_PREFIX } from '../../shared/contract/wire';
import { ROOT, startHostProcess, stopHostProcess, type HostProcess } from './host-process';
import { electronBinary as binaryIn } from '../../scripts/electron-binary.mjs';
import { stopManager } from '../support/manager';

/**
 * The app under test, the same for both Playwright projects:
 * - browser-mode: the built host (`povdesk serve`) in Node, its renderer in Debian's Chromium;
 * - electron: the built app in Electron through `_electron`, wherever an Electron binary exists;
 *   where none does, every test reports itself skipped with the reason.
 */
export interface App {
  mode: 'browser' | 'electron';
  url: string;
  home: string;
  page: Page;
  /** Restarts the app (host process or Electron) on the same data directory. */
  restart(): Promise<void>;
  /** Everything the app's process printed (stdout + stderr), across restarts. */
  output(): string;
  /** Opens a sidebar section by its label. */
  open(section: string): Promise<void>;
  /** One contract call from inside the page, through the same transport the UI uses. */
  call(method: string, args: unknown): Promise<unknown>;
}

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The Electron binary's path, or why there is none (no binary can be downloaded on some machines).
 * Read from the package's path.txt: `require('electron')` would try a download on every call.
 */
export function electronBinary(): { path: string } | { reason: string } {
  return binaryIn(ROOT);
}

interface Running {
  page: Page;
  url: string;
  output(): string;
  /** keepBrowser: browser mode restarts only the host and keeps the tab. */
  stop(keepBrowser?: boolean): Promise<void>;
  browser?: Browser;
}

/** Browser mode keeps one Chromium page across restarts of the host, as a person's tab would. */
async function startBrowserMode(
  env: NodeJS.ProcessEnv,
  chromium: BrowserType,
  reuse?: { browser: Browser; page: Page },
): Promise<Running & { browser: Browser }> {
  const host: HostProcess = await startHostProcess(env);
  const browser =
    reuse?.browser ?? (await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS }));
  const page = reuse?.page ?? (await browser.newPage());
  if (!reuse) page.on('pageerror', (e) => console.error('[page error]', e.message));
  await page.goto(host.openUrl);
  return {
    browser,
    page,
    url: host.openUrl,
    output: host.output,
    stop: async (keepBrowser?: boolean) => {
      await stopHostProcess(host);
      if (!keepBrowser) await browser.close();
    },
  };
}

async function startElectron(env: NodeJS.ProcessEnv, executablePath: string): Promise<Running> {
  const app: ElectronApplication = await _electron.launch({
    executablePath,
    args: [join(ROOT, 'out', 'main', 'index.js'), '--no-sandbox', '--disable-gpu'],
    env: env as Record<string, string>,
  });
  let out = '';
  app.process().stdout?.on('data', (b) => (out += b));
  app.process().stderr?.on('data', (b) => (out += b));
  const page = await app.firstWindow();
  page.on('pageerror', (e) => console.error('[page error]', e.message));
  return { page, url: page.url(), output: () => out, stop: () => app.close() };
}

export const test = base.extend<{ appEnv: Record<string, string>; app: App }>({
  appEnv: [{}, { option: true }],
  app: async ({ appEnv, playwright }, use, testInfo) => {
    const mode = testInfo.project.name === 'electron' ? 'electron' : 'browser';
    let electronPath = '';
    if (mode === 'electron') {
      const bin = electronBinary();
      if ('reason' in bin) {
        console.log(`[skipped] ${testInfo.title} under Electron: ${bin.reason}`);
        testInfo.skip(true, bin.reason);
        return;
      }
      electronPath = bin.path;
    }
    const home = mkdtempSync(join(tmpdir(), 'povdesk-e2e-'));
    const env = { ...process.env, POVDESK_HOME: home, ...appEnv };
    const launch = (reuse?: Running): Promise<Running> =>
      mode === 'electron'
        ? startElectron(env, electronPath)
        : startBrowserMode(env, playwright.chromium, reuse?.browser ? { browser: reuse.browser, page: reuse.page } : undefined);
    let running = await launch();
    let past = '';
    const app: App = {
      mode,
      get url() {
        return running.url;
      },
      get page() {
        return running.page;
      },
      home,
      restart: async () => {
        past += running.output();
        await running.stop(true);
        running = await launch(running);
      },
      output: () => past + running.output(),
      open: async (section) => {
        await running.page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: section, exact: true }).click();
      },
      call: (method, args) =>
        running.page.evaluate(
          async ({ method, args, path, protocol, prefix }) => {
            const bridge = (window as unknown as { povdesk?: { call(m: string, a: unknown): Promise<unknown> } }).povdesk;
            if (bridge) return bridge.call(method, args);
            const token = sessionStorage.getItem('povdesk.token');
            const ws = new WebSocket(`ws://${location.host}${path}`, [protocol, prefix + token]);
            return await new Promise((resolve, reject) => {
              ws.onopen = () => ws.send(JSON.stringify({ t: 'call', id: 1, method, args }));
              ws.onmessage = (ev) => {
                const m = JSON.parse(String(ev.data)) as { t: string; id?: number; result?: unknown; error?: { message: string } };
                if (m.id !== 1) return;
                ws.close();
                if (m.t === 'result') resolve(m.result);
                else reject(new Error(m.error?.message ?? 'call failed'));
              };
              ws.onerror = () => reject(new Error('cannot reach the host'));
            });
          },
          { method, args, path: WS_PATH, protocol: WS_PROTOCOL, prefix: WS_TOKEN_PREFIX },
        ),
    };
    await use(app);
    await running.stop();
    // the manager a local-VM call started outlives the app on purpose; the test's must not
    await stopManager(home);
    rmSync(home, { recursive: true, force: true });
  },
});

export { expect } from '@playwright/test';
