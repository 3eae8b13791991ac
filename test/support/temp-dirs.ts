import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { stopManager } from './manager';

/**
 * Every folder a test makes in the system's temp dir comes from here, and is removed after the test
 * file that made it, with any vm-manager started in it stopped first (homes, keys and certificates
 * had piled up in /tmp by the thousand). The sweep is registered when a test file first imports
 * this module, so it runs after that file's own after-hooks. Outside a test file (a child process
 * a test spawns imports the same helpers) there is no suite to attach to, and nothing to sweep.
 */
const made: string[] = [];
try {
  afterAll(async () => {
    for (const dir of made.splice(0)) {
      await stopManager(dir).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });
} catch {
  // not collecting a test file
}

/** A new folder `<tmp>/<prefix>XXXXXX`, removed after the test file. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
