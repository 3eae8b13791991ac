import { test as base, type Page } from '@playwright/test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHostProcess, stopHostProcess, type HostProcess } from './host-process';

export interface App {
  url: string;
  home: string;
  page: Page;
  /** Restarts the host process on the same data directory and reloads the page. */
  restart(): Promise<void>;
  /** Everything the host process printed (stdout + stderr), across restarts. */
  output(): string;
  /** Opens a sidebar section by its label. */
  open(section: string): Promise<void>;
}

export const test = base.extend<{ appEnv: Record<string, string>; app: App }>({
  appEnv: [{}, { option: true }],
  app: async ({ page, appEnv }, use) => {
    const home = mkdtempSync(join(tmpdir(), 'povdesk-e2e-'));
    const env = { ...process.env, POVDESK_HOME: home, ...appEnv };
    let host: HostProcess = await startHostProcess(env);
    let past = '';
    page.on('pageerror', (e) => console.error('[page error]', e.message));
    await page.goto(host.openUrl);
    const app: App = {
      get url() {
        return host.openUrl;
      },
      home,
      page,
      restart: async () => {
        past += host.output();
        await stopHostProcess(host);
        host = await startHostProcess(env);
        await page.goto(host.openUrl);
      },
      output: () => past + host.output(),
      open: async (section) => {
        await page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: section, exact: true }).click();
      },
    };
    await use(app);
    await stopHostProcess(host);
  },
});

export { expect } from '@playwright/test';
