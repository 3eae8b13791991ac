import type { Core } from '../../../main/core/create';
import type { Transport } from '../../../renderer/src/transport';
import { testCore } from '../../support/core';
import { coreTransport } from '../core-transport';
import { setTransport } from '../../../renderer/src/api';
import { usePovs } from '../../../renderer/src/state/pov';
import { startEmulator, type Emulator } from '../../skytap-emulator/emulator';
import { SEEDS } from '../../skytap-emulator/seed';

/**
 * The real core (SQLite file, job runner, stream hub, its Dispatcher) with the Skytap poll and the
 * control node's enrolment poll shortened (from 10 s, so an install settles within a test).
 */
export async function povCore(env: NodeJS.ProcessEnv = {}): Promise<{ core: Core; transport: Transport }> {
  const { core } = await testCore({ env: { POVDESK_SKYTAP_POLL_MS: '20', ...env }, tuning: { controlNode: { enrolPollMs: 30 } } });
  return { core, transport: coreTransport(core) };
}

/**
 * What a POVs page test starts from: the Skytap emulator (demo seed, fast timing), a povCore as
 * the renderer's transport, an empty POV store, and confirm() answering yes.
 */
export async function povPageWorld(): Promise<{ core: Core; emu: Emulator }> {
  const emu = await startEmulator({ seed: SEEDS.demo, timing: { createBusyMs: 40, runstateBusyMs: 40, deleteMs: 40, rateLimitedMs: 100 } });
  const { core, transport } = await povCore();
  setTransport(transport);
  usePovs.setState({ povs: null, error: null, actionError: null, detail: {} });
  window.confirm = () => true;
  return { core, emu };
}
