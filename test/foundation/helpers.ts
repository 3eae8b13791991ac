import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCore, type Core } from '../../main/core/create';
import { MemorySecretStore } from '../../main/services/secrets/store';

export function tempHome(prefix = 'povdesk-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * A core on a real SQLite file in a temp home. The secret store is the in-memory one only for
 * tests that are not about secrets; the keyring suite uses the real keychain.
 */
export async function testCore(env: NodeJS.ProcessEnv = {}): Promise<Core> {
  const home = tempHome();
  return createCore({
    home,
    env: { ...env, POVDESK_HOME: home },
    role: 'test',
    secrets: new MemorySecretStore({ backend: 'memory', available: false, message: 'test', remedy: null }),
  });
}
