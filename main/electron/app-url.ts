import { pathToFileURL } from 'node:url';

/**
 * Whether a URL is the app's own page (kept free of `electron` so it can be tested in Node).
 * devUrl is electron-vite's dev server (dev only): the origin must be exactly its origin. Otherwise
 * the page is the built indexFile: a file: URL with no host and exactly that path (a fragment, the
 * renderer's route, may differ). Substrings and prefixes never decide: `file:///x/renderer/index.html`
 * and `http://localhost:5173.evil.test` are other pages.
 */
export function isAppUrl(url: string, devUrl: string | undefined, indexFile: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (devUrl) return u.origin !== 'null' && u.origin === new URL(devUrl).origin && !u.username && !u.password;
  const page = pathToFileURL(indexFile);
  return u.protocol === 'file:' && u.host === '' && u.pathname === page.pathname && u.search === '';
}
