import { afterAll, beforeAll } from 'vitest';
import type { Core } from '../../main/core/create';
import { startHost, type Host } from '../../main/host/server';
import { testCore as supportCore } from '../support/core';
import { stopManager } from '../support/manager';
import { tempDir } from '../support/temp-dirs';

/** A new directory under the system's temp dir, removed after the test file that made it. */
export function tempHome(prefix = 'povdesk-test-'): string {
  return tempDir(prefix);
}

/**
 * The support core (test/support/core.ts) as a bare Core, in a temp home left for the test to
 * inspect. The secret store is the in-memory one; the keyring suite uses the real keychain. Its
 * close() also stops the vm-manager a call started in that home (app.diagnostics, vm.*): the app
 * leaves it running on purpose, a test must not.
 */
export async function testCore(env: NodeJS.ProcessEnv = {}): Promise<Core> {
  const home = tempHome();
  const { core } = await supportCore({ env, home });
  const close = core.close.bind(core);
  core.close = async () => {
    await close();
    await stopManager(home);
  };
  return core;
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
