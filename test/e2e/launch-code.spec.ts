import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { startHostProcess, stopHostProcess, type HostProcess } from './host-process';
import { stopManager } from '../support/manager';

/**
 * Issue 10 item 5 in a real browser: `serve --open` gives the opener a one-time code, Chromium
 * opens that URL, the page exchanges the code for the token and works; the same link a second
 * time gets nothing and says what to do.
 */
let host: HostProcess;
let opened = '';
// The stand-in opener's folder and the host's home, both removed after the file's tests.
let bin = '';
let home = '';

const browserModeOnly = 'browser mode only: `serve --open` opens the browser-mode host';

// eslint-disable-next-line no-empty-pattern -- Playwright names fixtures by destructuring: `{}` asks for none
test.beforeAll(async ({}, testInfo) => {
  if (testInfo.project.name === 'electron') return;
  bin = mkdtempSync(join(tmpdir(), 'povdesk-opener-'));
  const argvFile = join(bin, 'argv.txt');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${argvFile}'\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  home = mkdtempSync(join(tmpdir(), 'povdesk-e2e-'));
  host = await startHostProcess({ ...process.env, POVDESK_HOME: home, PATH: `${bin}:${process.env.PATH}` }, ['--open']);
  for (let i = 0; i < 100 && !existsSync(argvFile); i++) await new Promise((r) => setTimeout(r, 100));
  opened = readFileSync(argvFile, 'utf8').trim();
});
test.afterAll(async () => {
  if (host) await stopHostProcess(host);
  if (home) {
    await stopManager(home);
    rmSync(home, { recursive: true, force: true });
  }
  if (bin) rmSync(bin, { recursive: true, force: true });
});

test('the browser opened with the one-time code gets in; the link does not work twice', async ({ playwright }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', browserModeOnly);
  const browser = await playwright.chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  const token = /#token=([A-Za-z0-9_-]+)/.exec(host.openUrl)![1]!;
  expect(opened).toMatch(/#code=[A-Za-z0-9_-]+$/);
  expect(opened).not.toContain(token);

  await page.goto(opened);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Settings', exact: true }).click();
  await expect(page.getByTestId('keyring-backend')).toBeVisible();
  // The code is gone from the address bar; the token is kept for this tab only.
  expect(page.url()).not.toContain('#code=');
  expect(await page.evaluate(() => sessionStorage.getItem('povdesk.token'))).toBe(token);

  const other = await browser.newPage();
  await other.goto(opened);
  await other.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Settings', exact: true }).click();
  await expect(other.getByRole('alert').first()).toContainText('already used or has expired');
  await other.close();
  await browser.close();
});
