import { afterAll } from 'vitest';

/**
 * `afterAll` for the test file that imports the calling helper module, registered at that module's
 * import so it runs after the file's own after-hooks. Outside a test file (a child process a test
 * spawns imports the same helpers) there is no suite to attach to, and nothing to sweep.
 */
export function afterFile(fn: () => unknown): void {
  try {
    afterAll(async () => {
      await fn();
    });
  } catch {
    // not collecting a test file
  }
}
