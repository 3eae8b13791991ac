import type { povMethods } from '../../../shared/contract/pov';
import type { reconcileMethods } from '../../../shared/contract/reconcile';
import { PovService } from '../../services/pov/service';
import type { ControlNodeInstaller } from '../../services/pov/types';
import type { Base } from '../base';
import { skytapClientFor, type DomainHandlers } from './skytap';
import { readinessService } from './readiness';

const services = new WeakMap<Base, PovService>();

/**
 * POVDESK_SKYTAP_POLL_MS: how often a job re-reads an environment while waiting (default 5000).
 * Tests and the e2e host shorten it; anything outside 10..60000 ms is refused loudly.
 */
export function pollMsFrom(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.POVDESK_SKYTAP_POLL_MS;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10 || n > 60_000) {
    throw new Error(`POVDESK_SKYTAP_POLL_MS must be an integer number of milliseconds from 10 to 60000, got ${JSON.stringify(raw)}`);
  }
  return n;
}

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
      hub: base.hub,
      decorate: (views) => readinessService(base).badges(views),
      skytap: (signal) => skytapClientFor(base, { signal }),
      ...(pollMsFrom(base.env) !== undefined ? { pollMs: pollMsFrom(base.env)! } : {}),
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

export function povHandlers(
  base: Base,
): DomainHandlers<Omit<typeof povMethods, 'pov.readiness' | 'pov.setControlNodeName' | 'pov.setRoleHosts' | 'pov.installControlNode'> & typeof reconcileMethods> {
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
    'pov.setAutoDelete': async (args) => ({ pov: await svc.setAutoDelete(args.povId, args.at) }),
    'reconcile.runNow': async () => ({ jobId: svc.runReconcile() }),
  };
}
