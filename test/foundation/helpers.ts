import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createCore, type Core } from '../../main/core/create';
import { startHost, type Host } from '../../main/host/server';
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

/**
 * A test core with the browser-mode host in front of it, set up before and torn down after the
 * describe block that calls this. Read `core` and `host` inside the tests.
 */
export function hostFixture(): { readonly core: Core; readonly host: Host } {
  const f = {} as { core: Core; host: Host };
  beforeAll(async () => {
    f.core = await testCore();
    f.host = await startHost({ core: f.core, staticDir: tempHome() });
  });
  afterAll(async () => {
    await f.host?.close();
    await f.core?.close();
  });
  return f;
}
