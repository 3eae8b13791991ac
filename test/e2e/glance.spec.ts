import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { createPovInUi, saveSkytapInUi, useDemoEmulator } from './glance-helpers';

/**
 * Read the POV list at a glance, at 1280 × 800 in Chromium against the real host and the Skytap
 * emulator: each row carries a readiness badge in words; no text cut short without its full value
 * on hover or in the expanded row; every action button inside its row's box; the POV page shows
 * the checklist. Screenshots go to the test output for a reviewer (not compared to anything).
 */
const emulator = useDemoEmulator();

/** Every element in the rows whose text overflows its box: its text, and the title that says it in full. */
function truncated(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.pov-scroll [role="row"] *')]
      .filter((e): e is HTMLElement => e instanceof HTMLElement && e.children.length === 0 && (e.textContent ?? '').trim() !== '')
      .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
      .map((e) => ({ text: e.textContent!.trim(), title: e.closest('[title]')?.getAttribute('title') ?? null })),
  );
}

test('the list at 1280×800: badges in words, full reasons reachable, actions inside their rows; the checklist', async ({ app }, info) => {
  test.skip(app.mode !== 'browser', 'layout is checked in browser mode (no Electron binary here)');
  const { page } = app;
  await page.setViewportSize({ width: 1280, height: 800 });
  await saveSkytapInUi(app, emulator().url);

  await app.open('POVs');
  const a = await createPovInUi(page, /Windows AD lab/, 'Initech — quarterly access review with the security architecture team');
  await createPovInUi(page, /Windows AD lab/, 'Globex eval');
  await page
    .getByRole('button', { name: 'Refresh' })
    .first()
    .click()
    .catch(() => undefined);

  // the badge is words, and the reason is on hover
  const badge = a.getByTestId('readiness');
  await expect(badge).toHaveText(/^(ready|attention|not ready)$/);
  await expect(badge).toHaveText('not ready');
  const summary = await badge.getAttribute('title');
  expect(summary).toBeTruthy();
  await expect(a.getByTestId('pov-times')).toContainText(/deletes in \d+ d/);

  // nothing cut short without the full text on hover
  const cut = await truncated(page);
  for (const c of cut) expect(c.title, `"${c.text}" is cut short with no title`).not.toBeNull();
  for (const c of cut) expect(c.title!.replace(/\s+/g, ' ')).toContain(c.text.replace(/…$/, '').replace(/\s+/g, ' '));

  // no action button outside its row's box
  for (const row of await page.locator('.pov-scroll [role="row"]').all()) {
    const box = (await row.boundingBox())!;
    for (const b of await row.locator('.pov-actions button:visible').all()) {
      const bb = (await b.boundingBox())!;
      expect(bb.x, `${await b.textContent()} starts left of its row`).toBeGreaterThanOrEqual(box.x);
      expect(bb.x + bb.width, `${await b.textContent()} ends right of its row`).toBeLessThanOrEqual(box.x + box.width + 0.5);
      expect(bb.y).toBeGreaterThanOrEqual(box.y);
      expect(bb.y + bb.height).toBeLessThanOrEqual(box.y + box.height + 0.5);
    }
    expect(await row.locator('.pov-actions button:visible').count()).toBe(3);
  }
  await page.screenshot({ path: info.outputPath('povs-1280.png'), fullPage: true });

  // the expanded row says every reason in full
  await a.getByRole('button', { name: /^Show details for Initech/ }).click();
  const details = a.getByTestId('pov-details');
  await expect(details).toContainText(summary!);
  // expanding the top row (newest first: Globex) moves the row below down to make room
  const globexRow = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Globex eval', exact: true }) });
  const before = (await a.boundingBox())!.y;
  await globexRow.getByRole('button', { name: 'Show details for Globex eval' }).click();
  await expect(globexRow.getByTestId('pov-details')).toBeVisible();
  await expect.poll(async () => (await a.boundingBox())!.y).toBeGreaterThan(before + 100);
  const g1 = (await globexRow.boundingBox())!;
  expect((await a.boundingBox())!.y).toBeGreaterThanOrEqual(g1.y + g1.height - 0.5);
  await globexRow.getByRole('button', { name: 'Hide details for Globex eval' }).click();
  await page.screenshot({ path: info.outputPath('povs-expanded-1280.png'), fullPage: true });

  // below 1280 px the actions collapse into a menu that stays inside the row
  await page.setViewportSize({ width: 1100, height: 800 });
  const g = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Globex eval', exact: true }) });
  await expect(g.getByRole('button', { name: 'Start Globex eval' })).toBeHidden();
  const menuButton = g.getByRole('button', { name: 'Actions for Globex eval' });
  const rb = (await g.boundingBox())!;
  const mb = (await menuButton.boundingBox())!;
  expect(mb.x + mb.width).toBeLessThanOrEqual(rb.x + rb.width + 0.5);
  await menuButton.click();
  await expect(page.getByRole('menu')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('menu')).toBeHidden();
  await page.screenshot({ path: info.outputPath('povs-1100.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });

  // the POV page: the checklist, each item in words with its fix
  await page.getByRole('button', { name: 'Globex eval', exact: true }).click();
  const list = page.getByTestId('readiness-checklist');
  await expect(list.getByTestId('readiness-overall')).toHaveText('not ready');
  await expect(list.locator('[data-item="environment"]')).toContainText('ok');
  await expect(list.locator('[data-item="share"]')).toContainText('Create a share link');
  await page.getByRole('region', { name: 'Share' }).getByRole('button', { name: 'Create share link' }).click();
  // the link is made by a job: check again once it is there, not while it is being made
  await expect(page.getByRole('region', { name: 'Share' }).getByTestId('share-link')).toContainText('/desktops');
  await list.getByRole('button', { name: 'Check again' }).click();
  await expect(list.locator('[data-item="share"]')).toContainText(/^ok/);
  await page.screenshot({ path: info.outputPath('pov-page-1280.png'), fullPage: true });

  // the customer's time zone: stored with the POV, every time shown in the SE's zone and the customer's
  const se = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  const customer = se === 'Asia/Tokyo' ? 'America/New_York' : 'Asia/Tokyo';
  const tzForm = page.getByRole('form', { name: 'Customer time zone' });
  await tzForm.getByLabel('Customer time zone').fill('+09:00');
  await tzForm.getByRole('button', { name: 'Save' }).click();
  await expect(tzForm.getByRole('alert')).toContainText('IANA');
  await expect(page.getByTestId('auto-delete-at')).not.toContainText('customer');
  await tzForm.getByLabel('Customer time zone').fill(customer.toLowerCase());
  await tzForm.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('auto-delete-at')).toContainText(` ${se} · `);
  await expect(page.getByTestId('auto-delete-at')).toContainText(`${customer} customer`);
  await expect(page.getByTestId('share-expires-at')).toContainText(`${customer} customer`);
  await expect(page.getByTestId('next-warning-at')).toContainText(`${customer} customer`);
  await expect(page.getByRole('form', { name: 'Customer time zone' }).getByLabel('Customer time zone')).toHaveValue(customer);
  await expect(page.getByRole('region', { name: 'Share' }).getByLabel('Customer time zone')).toHaveValue(customer);
  await page.screenshot({ path: info.outputPath('pov-page-customer-tz-1280.png'), fullPage: true });
  await page.getByRole('button', { name: '← POVs' }).click();
  const gRow = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Globex eval', exact: true }) });
  await gRow.getByRole('button', { name: 'Show details for Globex eval' }).click();
  await expect(gRow.getByTestId('pov-details')).toContainText(`${customer} customer`);
  await page.screenshot({ path: info.outputPath('povs-customer-tz-1280.png'), fullPage: true });

  // rows in each state a reviewer should see: running, suspended, and failed (Skytap refuses the create)
  await page.getByRole('button', { name: 'Suspend Initech — quarterly access review with the security architecture team' }).click();
  emulator().faults.push({ match: 'POST /configurations', status: 422, times: 5 });
  await page.getByRole('button', { name: 'New POV' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create POV' });
  await dialog.getByRole('option', { name: /Windows AD lab/ }).click();
  await dialog.getByLabel('POV name').fill('Hooli (Skytap refuses the create)');
  await dialog.getByRole('button', { name: 'Create' }).click();
  const hooli = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Hooli (Skytap refuses the create)', exact: true }) });
  await expect(hooli.locator('.pov-status .error')).toBeVisible({ timeout: 30_000 });
  await expect(hooli.getByTestId('readiness')).toHaveText('not ready');
  await expect(a.getByTestId('runstate')).toHaveText('suspended', { timeout: 30_000 });
  await expect(gRow.getByTestId('runstate')).toHaveText('running');
  await page.screenshot({ path: info.outputPath('povs-states-1280.png'), fullPage: true });

  // rows in progress: Skytap holds a create's and a destroy's reply for a few seconds, long
  // enough to see each row say what it is doing (the step in words beside its progress bar)
  emulator().faults.clear(); // the refused create's unused 422s must not answer this one
  emulator().faults.push({ match: 'POST /configurations', delayMs: 8000 }, { match: 'DELETE /configurations/*', delayMs: 8000 });
  await page.getByRole('button', { name: 'New POV' }).click();
  await dialog.getByRole('option', { name: /Windows AD lab/ }).click();
  await dialog.getByLabel('POV name').fill('Pied Piper (being created)');
  await dialog.getByRole('button', { name: 'Create' }).click();
  const piper = page.locator('[role="row"]', { has: page.getByRole('button', { name: 'Pied Piper (being created)', exact: true }) });
  page.once('dialog', (d) => void d.accept());
  await gRow.getByRole('button', { name: 'Destroy Globex eval' }).click();
  await expect(piper.locator('.pov-status')).toContainText('create environment');
  await expect(piper.getByRole('progressbar')).toBeVisible();
  await expect(gRow.locator('.pov-status')).toContainText('delete environment');
  await expect(gRow.getByRole('progressbar')).toBeVisible();
  // a step cut short in the narrow Status column is readable in full on hover
  const cutNow = await truncated(page);
  for (const c of cutNow) expect(c.title, `"${c.text}" is cut short with no title`).not.toBeNull();
  for (const c of cutNow) expect(c.title!.replace(/\s+/g, ' ')).toContain(c.text.replace(/…$/, '').replace(/\s+/g, ' '));
  await piper.screenshot({ path: info.outputPath('povs-row-creating-1280.png') });
  await gRow.screenshot({ path: info.outputPath('povs-row-destroying-1280.png') });
  await page.screenshot({ path: info.outputPath('povs-in-progress-1280.png'), fullPage: true });
  // both finish: the held replies were slow, not lost
  await expect(piper.getByTestId('runstate')).toHaveText('running', { timeout: 30_000 });
  await expect(gRow).toHaveCount(0, { timeout: 30_000 });
});
