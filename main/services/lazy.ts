import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded with `require` on first use instead of by a static `import`, for the
 * host's cold start (docs/decisions/foundation.md, "Cold start"): the first answer needs no HTTP client and no SSH
 * stack (undici and ssh2 loaded at start-up cost ~55 ms of ~250), and a CommonJS package imported
 * from ESM is first scanned by Node's cjs-module-lexer for its named exports, which `require` skips
 * (better-sqlite3, ws). Types still come from `import type`.
 */
export function lazyRequire<T>(id: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= require(id) as T);
}

/** A response body as JSON, or null when it is empty or not JSON (the caller validates what it got). */
export function jsonOrNull(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
