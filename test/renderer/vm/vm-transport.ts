import { toWireError } from '../../../shared/contract';
import { vmMethods } from '../../../shared/contract/vm';
import type { Core } from '../../../main/core/create';
import { vmHandlers } from '../../../main/core/handlers/vm';
import type { VmApp } from '../../../main/services/vm/service';
import type { Transport } from '../../../renderer/src/transport';
import { coreTransport } from '../core-transport';

/**
 * coreTransport plus the vm.* methods, checked against their contract both ways as the dispatcher
 * does (until the lead spreads vmMethods into the contract index, the core's dispatcher does not
 * know them).
 */
export function vmTransport(core: Core, app?: VmApp): Transport {
  const inner = coreTransport(core);
  const handlers = vmHandlers(core.base, app) as unknown as Record<string, (a: unknown, c: unknown) => Promise<unknown>>;
  return {
    ...inner,
    call: async (method, args) => {
      if (!(typeof method === 'string' && method in vmMethods)) return inner.call(method, args);
      const def = vmMethods[method as keyof typeof vmMethods];
      try {
        const parsed = def.args.safeParse(args ?? {});
        if (!parsed.success) throw Object.assign(new Error(`invalid arguments for ${method}: ${parsed.error.message}`), { code: 'invalid_request' });
        return def.result.parse(await handlers[method]!(parsed.data, { transport: 'test' }));
      } catch (e) {
        const w = toWireError(e);
        throw Object.assign(new Error(w.message), { code: w.code, detail: w.detail });
      }
    },
  };
}
