/**
 * The main window's size, position, maximized state and last page, kept across launches in
 * <home>/window-state.json. The file is untrusted (hand edits, a crash mid-write): it is validated,
 * and a saved position that no current display shows is dropped, so the window never opens
 * off-screen after a monitor was unplugged.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

const int = lazySchema(() => z.number().int().min(-100_000).max(100_000));
export const windowStateSchema = lazySchema(() =>
  z
    .object({
      bounds: z
        .object({ x: int, y: int, width: z.number().int().min(200).max(20_000), height: z.number().int().min(150).max(20_000) })
        .strict(),
      maximized: z.boolean(),
      /** A page id from the renderer's sidebar (the URL hash #/<page>). */
      lastPage: z
        .string()
        .regex(/^[a-z][a-z-]{0,39}$/)
        .nullable(),
    })
    .strict(),
);
export type WindowState = z.infer<typeof windowStateSchema>;

export const DEFAULT_SIZE = { width: 1280, height: 820 };
export const MIN_VISIBLE = 64; // px of the title bar that must be on a display

export function windowStateFile(home: string): string {
  return join(home, 'window-state.json');
}

/** The saved state, or null when there is none or it does not validate. */
export function loadWindowState(file: string): WindowState | null {
  if (!existsSync(file)) return null;
  try {
    const r = windowStateSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** Writes atomically (temp file + rename), so a crash leaves the old state or the new one. */
export function saveWindowState(file: string, state: WindowState): void {
  const parsed = windowStateSchema.parse(state);
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(parsed), { mode: 0o600 });
  renameSync(tmp, file);
}

function overlap(a: Rect, b: Rect): { w: number; h: number } {
  return {
    w: Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x),
    h: Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y),
  };
}

/**
 * The bounds to open the window with: the saved ones when their top strip is on one of the
 * displays' work areas (shrunk to fit that display), else the default size centred by the OS.
 */
export function restoreBounds(saved: WindowState | null, workAreas: Rect[]): Partial<Rect> & { width: number; height: number } {
  if (!saved) return { ...DEFAULT_SIZE };
  const b = saved.bounds;
  const titleStrip: Rect = { x: b.x, y: b.y, width: b.width, height: Math.min(b.height, 32) };
  const area = workAreas.find((a) => {
    const o = overlap(titleStrip, a);
    return o.w >= MIN_VISIBLE && o.h > 0;
  });
  if (!area)
    return { width: Math.min(b.width, workAreas[0]?.width ?? b.width), height: Math.min(b.height, workAreas[0]?.height ?? b.height) };
  return { x: b.x, y: Math.max(b.y, area.y), width: Math.min(b.width, area.width), height: Math.min(b.height, area.height) };
}

/** The page id in a renderer URL's hash (#/<page> or #/<page>/<rest>), or null. */
export function pageFromUrl(url: string): string | null {
  const hash = url.includes('#') ? url.slice(url.indexOf('#') + 1) : '';
  const m = /^\/?([a-z][a-z-]{0,39})(?:[/?]|$)/.exec(hash);
  return m ? m[1]! : null;
}
