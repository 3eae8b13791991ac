import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the built renderer lives: POVDESK_RENDERER_DIR, else the first `out/renderer` found walking
 * up from this module (works from the built out/main and from the sources under tsx).
 */
export function rendererDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.POVDESK_RENDERER_DIR) return resolve(env.POVDESK_RENDERER_DIR);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    for (const candidate of [join(dir, 'renderer'), join(dir, 'out', 'renderer')]) {
      if (existsSync(join(candidate, 'index.html'))) return candidate;
    }
    dir = dirname(dir);
  }
  throw new Error('the renderer is not built: run `npm run build` first (or set POVDESK_RENDERER_DIR)');
}
