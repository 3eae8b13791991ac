import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_SIZE,
  loadWindowState,
  pageFromUrl,
  restoreBounds,
  saveWindowState,
  windowStateFile,
  type WindowState,
} from '../../main/desktop/window-state';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const home = () => {
  const d = mkdtempSync(join(tmpdir(), 'winstate-'));
  dirs.push(d);
  return d;
};
const state: WindowState = { bounds: { x: 100, y: 80, width: 1400, height: 900 }, maximized: true, lastPage: 'local-vms' };
const laptop = { x: 0, y: 0, width: 1920, height: 1050 };
const external = { x: 1920, y: 0, width: 2560, height: 1400 };

describe('window state', () => {
  it('round-trips through a 0600 file and survives a restart', () => {
    const f = windowStateFile(home());
    saveWindowState(f, state);
    expect(loadWindowState(f)).toEqual(state);
    expect(statSync(f).mode & 0o777).toBe(0o600);
  });

  it('ignores a missing, corrupt or hand-edited file, and refuses to save nonsense', () => {
    const f = windowStateFile(home());
    expect(loadWindowState(f)).toBeNull();
    writeFileSync(f, '{"bounds":');
    expect(loadWindowState(f)).toBeNull();
    writeFileSync(f, JSON.stringify({ ...state, lastPage: '../../etc' }));
    expect(loadWindowState(f)).toBeNull();
    writeFileSync(f, JSON.stringify({ ...state, extra: 1 }));
    expect(loadWindowState(f)).toBeNull();
    expect(() => saveWindowState(f, { ...state, bounds: { ...state.bounds, width: 10 } })).toThrow();
    expect(readFileSync(f, 'utf8')).toContain('extra'); // unchanged by the refused save
  });

  it('reopens where it was, on the display that still shows it, shrunk to fit', () => {
    expect(restoreBounds(state, [laptop])).toEqual({ x: 100, y: 80, width: 1400, height: 900 });
    const onExternal = { ...state, bounds: { x: 2000, y: 50, width: 3000, height: 1600 } };
    expect(restoreBounds(onExternal, [laptop, external])).toEqual({ x: 2000, y: 50, width: 2560, height: 1400 });
  });

  it('does not reopen off-screen after the monitor that showed it is gone', () => {
    const onExternal = { ...state, bounds: { x: 2200, y: 100, width: 1200, height: 800 } };
    const r = restoreBounds(onExternal, [laptop]);
    expect(r.x).toBeUndefined();
    expect(r.y).toBeUndefined();
    expect(r).toMatchObject({ width: 1200, height: 800 });
    // only 20 px visible
    expect(restoreBounds({ ...state, bounds: { x: 1900, y: 10, width: 800, height: 600 } }, [laptop]).x).toBeUndefined();
    expect(restoreBounds(null, [laptop])).toEqual(DEFAULT_SIZE);
  });

  it('reads the page from the renderer URL hash', () => {
    expect(pageFromUrl('file:///opt/POV%20Desk/resources/app.asar/out/renderer/index.html#/terminals')).toBe('terminals');
    expect(pageFromUrl('http://localhost:5173/#/povs/abc')).toBe('povs');
    expect(pageFromUrl('file:///x/index.html')).toBeNull();
    expect(pageFromUrl('file:///x/index.html#/Bad..page')).toBeNull();
  });
});
