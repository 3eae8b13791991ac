import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** True when the program resolves on PATH (or is an existing absolute path). */
export function hasCommand(cmd: string): boolean {
  if (cmd.startsWith('/')) return existsSync(cmd);
  try {
    execFileSync('sh', ['-c', `command -v "$1"`, 'sh', cmd], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks that the system programs/files a suite needs exist. Returns null when all are present,
 * else a reason naming what is missing. Under CI=true a missing piece throws: CI installs every
 * system package, so a missing one is a broken run, not a skip.
 */
export function needs(items: string[]): string | null {
  const missing = items.filter((c) => !hasCommand(c));
  if (missing.length === 0) return null;
  const reason = `missing system programs: ${missing.join(', ')} (install them with .ci/run's apt-get line)`;
  if (process.env.CI === 'true') throw new Error(`CI=true and ${reason}`);
  console.warn(`[skipped] ${reason}`);
  return reason;
}
