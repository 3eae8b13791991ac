import type { Core } from '../../../main/core/create';
import { controlNodeHandlers } from '../../../main/core/handlers/controlNode';
import { povHandlers } from '../../../main/core/handlers/pov';
import cnMigration from '../../../main/services/store/migrations/003-control-node';
import cnPovMigration from '../../../main/services/store/migrations/005-control-node-pov';
import { controlNodeMethods } from '../../../shared/contract/controlNode';
import { skytapHandlers } from '../../../main/core/handlers/skytap';
import povMigration from '../../../main/services/store/migrations/002-pov';
import { toWireError } from '../../../shared/contract/errors';
import { povMethods } from '../../../shared/contract/pov';
import { reconcileMethods } from '../../../shared/contract/reconcile';
import { templatesMethods } from '../../../shared/contract/templates';
import { skytapMethods } from '../../../shared/contract/skytap';
import type { Transport } from '../../../renderer/src/transport';
import { testCore } from '../../foundation/helpers';
import { coreTransport } from '../core-transport';
import { setTransport } from '../../../renderer/src/api';
import { usePovs } from '../../../renderer/src/state/pov';
import { startEmulator, type Emulator } from '../../skytap-emulator/emulator';
import { SEEDS } from '../../skytap-emulator/seed';

const contract = { ...povMethods, ...skytapMethods, ...controlNodeMethods, ...reconcileMethods, ...templatesMethods } as Record<string, { args: { parse(x: unknown): unknown }; result: { parse(x: unknown): unknown } }>;

/**
 * A real core (SQLite file, job runner, stream hub) whose transport also serves this domain's
 * methods: arguments and results go through the pov/skytap contract schemas exactly as the
 * dispatcher does, whether or not the contract index has spread them in yet.
 */
export async function povCore(env: NodeJS.ProcessEnv = {}): Promise<{ core: Core; transport: Transport }> {
  const core = await testCore({ POVDESK_SKYTAP_POLL_MS: '20', ...env });
  const has = core.base.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'povs'").get();
  if (!has) povMigration.up(core.base.db);
  const table = (name: string) => core.base.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name);
  if (!table('control_node_agents')) cnMigration.up(core.base.db);
  const roleCols = core.base.db.prepare("SELECT COUNT(*) AS n FROM pragma_table_info('povs') WHERE name = 'entitle_host'").get() as { n: number };
  if (roleCols.n === 0) cnPovMigration.up(core.base.db);
  // the enrolment poll shortened from 10 s so an install settles within a test
  const handlers = { ...skytapHandlers(core.base), ...povHandlers(core.base), ...controlNodeHandlers(core.base, { enrolPollMs: 30 }) } as Record<string, (a: unknown, c: unknown) => Promise<unknown>>;
  const inner = coreTransport(core);
  const transport: Transport = {
    ...inner,
    call: async (method, args) => {
      const def = contract[method];
      if (!def) return inner.call(method, args);
      try {
        const parsed = def.args.parse(args ?? {});
        return def.result.parse(await handlers[method]!(parsed, { transport: 'test' }));
      } catch (e) {
        const w = toWireError(e);
        throw Object.assign(new Error(w.message), { code: w.code });
      }
    },
  };
  return { core, transport };
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
