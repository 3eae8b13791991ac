import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { createPovInUi, saveSkytapInUi, useDemoEmulator } from './glance-helpers';

/**
 * Every page at 1024×700 and 1400×900 in one app start, with a POV from the emulator so the
 * tables have rows (no VM is booted): a screenshot of each into the test's output (artifacts, not
 * golden images), and a check that fails on a layout fault — no interactive element's box
 * intersects another's (boxes as the user sees them: clipped by scrolling ancestors) and nothing
 * is wider than the viewport.
 */
const emulator = useDemoEmulator();

const SIZES = [
  { width: 1024, height: 700 },
  { width: 1400, height: 900 },
];
const SECTIONS = ['POVs', 'Local VMs', 'Templates', 'Terminals', 'Jobs', 'Settings'];

/** Layout faults on the page as drawn now, in words (empty: none). Runs in the page. */
async function faults(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1)
      out.push(`the page is ${document.documentElement.scrollWidth}px wide in a ${vw}px viewport`);
    const name = (el: Element) => {
      const text = (el.getAttribute('aria-label') ?? (el as HTMLElement).innerText ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
      return `${el.tagName.toLowerCase()}${text ? ` "${text}"` : ''}${el.id ? `#${el.id}` : ''}`;
    };
    type Box = { el: Element; l: number; t: number; r: number; b: number };
    /** The element's box clipped by every ancestor that clips (scroll areas, overflow hidden); null when nothing shows. */
    const visible = (el: Element): Box | null => {
      const s = getComputedStyle(el);
      if (s.visibility === 'hidden' || s.opacity === '0' || el.closest('[aria-hidden="true"], .xterm-helpers')) return null;
      // inside a closed <details> (Chromium keeps a stale box for it) or otherwise not drawn
      if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: true })) return null;
      const closedDetails = el.closest('details:not([open])');
      if (closedDetails && el.tagName !== 'SUMMARY' && !el.closest('summary')) return null;
      const r = el.getBoundingClientRect();
      let box = { el, l: r.left, t: r.top, r: r.right, b: r.bottom };
      for (let a = el.parentElement; a; a = a.parentElement) {
        const st = getComputedStyle(a);
        if (st.overflowX !== 'visible' || st.overflowY !== 'visible') {
          const c = a.getBoundingClientRect();
          box = { el, l: Math.max(box.l, c.left), t: Math.max(box.t, c.top), r: Math.min(box.r, c.right), b: Math.min(box.b, c.bottom) };
        }
      }
      return box.r - box.l >= 2 && box.b - box.t >= 2 ? box : null;
    };
    const boxes = [...document.querySelectorAll('button, a[href], input:not([type="hidden"]), select, textarea, [role="tab"], summary')]
      .map(visible)
      .filter((b): b is Box => b !== null);
    for (const b of boxes) {
      if (b.r > vw + 1) out.push(`${name(b.el)} ends at ${Math.round(b.r)}px, past the ${vw}px viewport`);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i]!;
        const b = boxes[j]!;
        if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
        const w = Math.min(a.r, b.r) - Math.max(a.l, b.l);
        const h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
        if (w > 1 && h > 1) out.push(`${name(a.el)} overlaps ${name(b.el)} by ${Math.round(w)}×${Math.round(h)}px`);
      }
    }
    return out;
  });
}

test('every page at 1024×700 and 1400×900: screenshots, no overlapping controls, nothing wider than the window', async ({ app }, info) => {
  test.skip(app.mode !== 'browser', 'screenshots run against browser mode (no Electron binary here)');
  test.setTimeout(150_000);
  const { page } = app;
  await page.setViewportSize(SIZES[1]!);
  await saveSkytapInUi(app, emulator().url);
  await app.open('POVs');
  await createPovInUi(page, /Windows AD lab/, 'Layout eval');

  const found: string[] = [];
  const shoot = async (label: string, size: { width: number }) => {
    await page.waitForTimeout(250);
    for (const f of await faults(page)) found.push(`[${size.width}] ${label}: ${f}`);
    await page.screenshot({ path: info.outputPath(`${label.replace(/\W+/g, '-').toLowerCase()}-${size.width}.png`), fullPage: true });
  };
  for (const size of SIZES) {
    await page.setViewportSize(size);
    for (const section of SECTIONS) {
      await app.open(section);
      await expect(page.getByRole('heading', { level: 2 }).first()).toBeVisible();
      await shoot(section, size);
    }
    // the POV page, both tabs, and the notification panel open over it
    await app.open('POVs');
    await page.getByRole('button', { name: 'Layout eval', exact: true }).click();
    await expect(page.getByTestId('readiness-checklist')).toBeVisible();
    await shoot('POV page', size);
    await page.getByRole('tab', { name: 'Details' }).click();
    await shoot('POV details', size);
    await page.getByRole('button', { name: /^Notifications/ }).click();
    await expect(page.getByRole('region', { name: 'Notifications' })).toBeVisible();
    await page.screenshot({ path: info.outputPath(`notifications-${size.width}.png`) });
    await page.keyboard.press('Escape');
    await expect(page.getByRole('region', { name: 'Notifications' })).toBeHidden();
  }
  expect(found, found.join('\n')).toEqual([]);
});
