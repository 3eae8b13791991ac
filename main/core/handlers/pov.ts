import type { povMethods } from '../../../shared/contract/pov';
import type { reconcileMethods } from '../../../shared/contract/reconcile';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

/** pov.list is readiness's: each row carries its readiness badge (see readiness.ts). */
export function povHandlers({
  pov,
}: Pick<Services, 'pov'>): DomainHandlers<
  Omit<typeof povMethods, 'pov.list' | 'pov.readiness' | 'pov.setControlNodeName' | 'pov.setRoleHosts' | 'pov.installControlNode'> &
    typeof reconcileMethods
> {
  return {
    'pov.create': async (args) => ({ jobId: pov.create(args).jobId }),
    'pov.get': async (args) => pov.get(args.id),
    'pov.start': async (args) => ({ jobId: pov.start(args.id) }),
    'pov.suspend': async (args) => ({ jobId: pov.suspend(args.id) }),
    'pov.destroy': async (args) => ({ jobId: pov.destroy(args.id) }),
    'pov.refreshVms': async (args) => ({ jobId: pov.refreshVms(args.id) }),
    'pov.setVmOs': async (args) => ({ vm: pov.setVmOs(args.povId, args.vmId, args.os) }),
    'pov.setCustomerTz': async (args) => ({ pov: pov.setCustomerTz(args.povId, args.customerTz) }),
    'pov.setInternetAccess': async (args) => ({ pov: await pov.setInternetAccess(args.povId, args.on) }),
    'pov.snapshot': async (args) => ({ jobId: pov.snapshot(args.id) }),
    'pov.reset': async (args) => ({ jobId: pov.reset(args.id) }),
    'pov.setAutoDelete': async (args) => ({ pov: await pov.setAutoDelete(args.povId, args.at) }),
    'reconcile.runNow': async () => ({ jobId: pov.runReconcile() }),
  };
}
