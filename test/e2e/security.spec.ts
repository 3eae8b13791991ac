import { expect, test } from './fixtures';

/** The renderer's Content-Security-Policy holds in the running app: no inline script, no remote content. */
test('the CSP forbids inline scripts and connections to anything but the app itself', async ({ app }) => {
  const { page } = app;
  await app.open('Settings');
  // (page.evaluate itself is exempt from CSP, so the checks go through what the page would do.)
  const inline = await page.evaluate(
    () =>
      new Promise<{ ran: boolean; violated: string[] }>((resolve) => {
        const violated: string[] = [];
        document.addEventListener('securitypolicyviolation', (e) => violated.push(e.violatedDirective));
        const s = document.createElement('script');
        s.textContent = 'window.__inlineRan = true';
        document.body.appendChild(s);
        setTimeout(() => resolve({ ran: (window as unknown as { __inlineRan?: boolean }).__inlineRan === true, violated }), 300);
      }),
  );
  expect(inline.ran).toBe(false);
  expect(inline.violated.some((d) => d.startsWith('script-src'))).toBe(true);
  const fetched = await page.evaluate(
    () =>
      new Promise<string[]>((resolve) => {
        const violated: string[] = [];
        document.addEventListener('securitypolicyviolation', (e) => violated.push(e.violatedDirective));
        fetch('http://127.0.0.2:9/').catch(() => undefined);
        setTimeout(() => resolve(violated), 300);
      }),
  );
  // Refused by the policy before any connection, not merely by a closed port.
  expect(fetched).toContain('connect-src');
  const violations = await page.evaluate(
    () =>
      new Promise<string[]>((resolve) => {
        const seen: string[] = [];
        document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective));
        const img = document.createElement('img');
        img.src = 'http://127.0.0.2:9/x.png';
        document.body.appendChild(img);
        setTimeout(() => resolve(seen), 500);
      }),
  );
  expect(violations).toContain('img-src');
});
