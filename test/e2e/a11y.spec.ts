import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { createPovInUi, saveSkytapInUi, useDemoEmulator } from './glance-helpers';

/**
 * Every page through axe (WCAG 2 A/AA rules), in the light and the dark theme, with realistic
 * data (a running POV from the emulator): no serious or critical violation. Screenshots of each
 * page go to the test output for a reviewer (not compared to anything).
 */
const emulator = useDemoEmulator();

const SECTIONS = ['POVs', 'Local VMs', 'Templates', 'Terminals', 'Jobs', 'Settings'];

async function serious(page: Page): Promise<string[]> {
  // legacy mode: the host's page lives in the browser's default context, where axe cannot open
  // its own blank page to merge frame results (the app has no iframes to merge).
  const r = await new AxeBuilder({ page }).setLegacyMode(true).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} — ${v.nodes
          .slice(0, 4)
          .map((n) => n.target.join(' '))
          .join(' | ')}`,
    );
}

test('every page passes axe in light and dark themes', async ({ app }, info) => {
  test.skip(app.mode !== 'browser', 'axe runs against browser mode (no Electron binary here)');
  test.setTimeout(120_000);
  const { page } = app;
  await page.setViewportSize({ width: 1280, height: 800 });
  await saveSkytapInUi(app, emulator().url);
  await app.open('POVs');
  await createPovInUi(page, /Windows AD lab/, 'Initech eval');

  const found: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const section of SECTIONS) {
      await app.open(section);
      await page.waitForTimeout(300);
      for (const v of await serious(page)) found.push(`[${scheme}] ${section}: ${v}`);
      await page.screenshot({ path: info.outputPath(`${scheme}-${section.replace(/\W+/g, '-').toLowerCase()}.png`), fullPage: true });
    }
    await app.open('POVs');
    await page.getByRole('button', { name: 'Show details for Initech eval' }).click();
    for (const v of await serious(page)) found.push(`[${scheme}] POVs (row expanded): ${v}`);
    await page.getByRole('button', { name: 'Hide details for Initech eval' }).click();
    await page.getByRole('button', { name: 'New POV' }).click();
    await expect(page.getByRole('dialog', { name: 'Create POV' })).toBeVisible();
    for (const v of await serious(page)) found.push(`[${scheme}] Create POV dialog: ${v}`);
    await page.keyboard.press('Escape');
    await expect(page.getByRole('dialog', { name: 'Create POV' })).toBeHidden();
    await page.getByRole('button', { name: 'Initech eval', exact: true }).click();
    await expect(page.getByTestId('readiness-checklist')).toBeVisible();
    for (const v of await serious(page)) found.push(`[${scheme}] POV page: ${v}`);
    await page.screenshot({ path: info.outputPath(`${scheme}-pov-page.png`), fullPage: true });
  }
  expect(found, found.join('\n')).toEqual([]);
});

test('focus is visible on buttons and links reached by keyboard', async ({ app }) => {
  test.skip(app.mode !== 'browser', 'checked in browser mode');
  const { page } = app;
  await app.open('POVs');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const outline = await page.evaluate(() => {
    const e = document.activeElement as HTMLElement | null;
    if (!e || e === document.body) return null;
    const s = getComputedStyle(e);
    return { tag: e.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
  });
  expect(outline).not.toBeNull();
  expect(outline!.style).not.toBe('none');
  expect(outline!.width).toBeGreaterThanOrEqual(2);
});
