import type { povMethods } from '../../../shared/contract/pov';
import { PovService } from '../../services/pov/service';
import type { ControlNodeInstaller } from '../../services/pov/types';
import type { Base } from '../base';
import { skytapClientFor, type DomainHandlers } from './skytap';

const services = new WeakMap<Base, PovService>();

/**
 * The one PovService of a Base (other domains, e.g. the control node, reach the same instance
 * through this to register the install hook or write the control_node_* columns).
 */
export function povServiceFor(base: Base, opts: { installControlNode?: ControlNodeInstaller } = {}): PovService {
  let svc = services.get(base);
  if (!svc) {
    svc = new PovService({
      db: base.db,
      jobs: base.jobs,
      log: base.log,
      skytap: (signal) => skytapClientFor(base, { signal }),
      ...(opts.installControlNode ? { installControlNode: opts.installControlNode } : {}),
    });
    services.set(base, svc);
    if (base.role === 'app') {
      const resumed = svc.resumeInterrupted();
      if (resumed.length) base.log.warn('resumed POV lifecycle jobs left half-way by an earlier process', { count: resumed.length });
      const stop = svc.startSweeps();
      base.onClose(stop);
    }
  }
  return svc;
}

export function povHandlers(base: Base): DomainHandlers<typeof povMethods> {
  const svc = povServiceFor(base);
  return {
    'pov.create': async (args) => ({ jobId: svc.create(args).jobId }),
    'pov.list': async (args) => ({ povs: svc.list(args.includeDestroyed ?? false) }),
    'pov.get': async (args) => svc.get(args.id),
    'pov.start': async (args) => ({ jobId: svc.start(args.id) }),
    'pov.suspend': async (args) => ({ jobId: svc.suspend(args.id) }),
    'pov.destroy': async (args) => ({ jobId: svc.destroy(args.id) }),
    'pov.refreshVms': async (args) => ({ jobId: svc.refreshVms(args.id) }),
    'pov.setVmOs': async (args) => ({ vm: svc.setVmOs(args.povId, args.vmId, args.os) }),
    'reconcile.runNow': async () => ({ jobId: svc.runReconcile() }),
  };
}
