import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isAppUrl } from '../../main/electron/app-url';

// Item 4 of the security review: the Electron trusted-page check compares whole URLs/origins.
describe('the Electron trusted-page check', () => {
  const indexFile = '/opt/POV Desk/resources/app/out/renderer/index.html';
  const page = pathToFileURL(indexFile).href;

  it('accepts the built page itself, with or without a fragment', () => {
    expect(isAppUrl(page, undefined, indexFile)).toBe(true);
    expect(isAppUrl(`${page}#/settings`, undefined, indexFile)).toBe(true);
  });

  it('refuses any other file that merely contains /renderer/index.html', () => {
    expect(isAppUrl('file:///x/renderer/index.html', undefined, indexFile)).toBe(false);
    expect(isAppUrl('file:///tmp/evil/renderer/index.html.html', undefined, indexFile)).toBe(false);
    expect(isAppUrl(`${page}/../../../../tmp/renderer/index.html`, undefined, indexFile)).toBe(false);
    expect(isAppUrl(`file://evil.test${pathToFileURL(indexFile).pathname}`, undefined, indexFile)).toBe(false);
    expect(isAppUrl('https://evil.test/renderer/index.html', undefined, indexFile)).toBe(false);
  });

  it('in dev, accepts the dev server origin only, not a look-alike host', () => {
    const dev = 'http://localhost:5173';
    expect(isAppUrl('http://localhost:5173/', dev, indexFile)).toBe(true);
    expect(isAppUrl('http://localhost:5173/#/povs', dev, indexFile)).toBe(true);
    expect(isAppUrl('http://localhost:5173.evil.test/', dev, indexFile)).toBe(false);
    expect(isAppUrl('http://localhost:51730/', dev, indexFile)).toBe(false);
    expect(isAppUrl('http://localhost:5173@evil.test/', dev, indexFile)).toBe(false);
    expect(isAppUrl('file:///x/renderer/index.html', dev, indexFile)).toBe(false);
  });

  it('refuses what is not a URL', () => {
    expect(isAppUrl('not a url', undefined, indexFile)).toBe(false);
    expect(isAppUrl('', 'http://localhost:5173', indexFile)).toBe(false);
  });
});
