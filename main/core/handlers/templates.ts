import { homedir } from 'node:os';
import { AppError } from '../../../shared/contract/errors';
import type { templatesMethods } from '../../../shared/contract/templates';
import { TemplateService } from '../../services/templates/service';
import { VmManagerSupervisor } from '../../services/vm/supervisor';
import { VmManagerClient } from '../../vm-manager/client';
import type { Base } from '../base';
import type { DomainHandlers } from './skytap';
import { vmAppFor } from './vm';

/** Long calls (an import copies the whole disk): 15 minutes instead of the VM client's 60 s. */
const BAKE_CLIENT_TIMEOUT_MS = 15 * 60_000;

/**
 * Where a bake may read a source image from: the user's home, POV Desk's home, and the
 * directories listed in POVDESK_BAKE_DIRS (colon-separated).
 */
export function bakeDirs(base: Base): string[] {
  const extra = (base.env.POVDESK_BAKE_DIRS ?? '').split(':').filter(Boolean);
  return [homedir(), base.home, ...extra];
}

const services = new WeakMap<Base, TemplateService>();

export function templateServiceFor(base: Base): TemplateService {
  let s = services.get(base);
  if (!s) {
    const supervisor = new VmManagerSupervisor({ home: base.home, log: base.log, env: base.env });
    s = new TemplateService({
      home: base.home,
      jobs: base.jobs,
      allowedDirs: bakeDirs(base),
      log: base.log,
      vmm: async () => {
        if (vmAppFor(base).mode() !== 'local') {
          throw new AppError('unsupported', 'baking needs the local vm-manager (the proof boot and the image store are local): switch Local VMs → Connection to local');
        }
        const ep = await supervisor.ensure();
        base.log.addSecret(ep.token);
        return { client: new VmManagerClient(ep.url, ep.token, BAKE_CLIENT_TIMEOUT_MS), stateDir: ep.stateDir };
      },
    });
    services.set(base, s);
  }
  return s;
}

export function templatesHandlers(base: Base): DomainHandlers<Omit<typeof templatesMethods, 'templates.runnerScript'>> {
  const svc = () => templateServiceFor(base);
  return {
    'templates.bake': async (args) => ({ jobId: svc().bake(args) }),
    'templates.baked': async () => ({ images: svc().list() }),
    'templates.export': async (args) => ({ jobId: svc().exportImage(args) }),
  };
}
