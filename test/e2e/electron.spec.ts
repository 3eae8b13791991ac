import { _electron as electron, test, expect } from '@playwright/test';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The Electron binary's path, or why there is none (no binary can be downloaded on some machines). */
function electronBinary(): { path: string } | { reason: string } {
  try {
    const p = createRequire(join(ROOT, 'package.json'))('electron') as unknown;
    if (typeof p === 'string' && existsSync(p)) return { path: p };
    return { reason: `the electron package resolved to ${String(p)}, which does not exist` };
  } catch (e) {
    return { reason: `no Electron binary on this machine (${(e as Error).message.split('\n')[0]})` };
  }
}

test('Electron: the window opens, Settings answers through IPC', async () => {
  const bin = electronBinary();
  if ('reason' in bin) console.log(`[skipped] Electron smoke: ${bin.reason}`);
  test.skip('reason' in bin, 'reason' in bin ? bin.reason : '');
  if ('reason' in bin) return;
  const app = await electron.launch({
    executablePath: bin.path,
    args: [join(ROOT, 'out', 'main', 'index.js'), '--no-sandbox', '--disable-gpu'],
    env: { ...process.env, POVDESK_HOME: mkdtempSync(join(tmpdir(), 'povdesk-electron-')) },
  });
  const page = await app.firstWindow();
  await page.getByRole('button', { name: 'Settings', exact: true }).click();
  await expect(page.getByTestId('token-status')).toHaveText(/token (not )?set/);
  expect(await page.evaluate(() => typeof (window as unknown as { require?: unknown }).require)).toBe('undefined');
  await app.close();
});
