import type { pamMethods } from '../../../shared/contract/pam';
import type { AgentTasks } from '../../services/pam/agent-tasks';
import type { HttpOptions } from '../../services/pam/http';
import { PamService } from '../../services/pam/service';
import type { Base } from '../base';
import { povServiceFor } from './pov';
import type { DomainHandlers } from './skytap';
import { JOB_KIND } from '../../../shared/contract/job-kinds';

export interface PamWiring {
  http?: HttpOptions;
  agentTasks?: () => Promise<AgentTasks | null>;
  connectPollMs?: number;
  checkpoint?: (step: string) => void;
}

const services = new WeakMap<Base, PamService>();

/** The one PamService of a Base; registers the destroy hook and (in the app) resumes interrupted runs. */
export function pamServiceFor(base: Base, wiring: PamWiring = {}): PamService {
  let svc = services.get(base);
  if (!svc) {
    svc = new PamService({
      db: base.db,
      jobs: base.jobs,
      secrets: base.secrets,
      settings: base.settings,
      env: base.env,
      addSecret: (v) => base.log.addSecret(v),
      ...wiring,
    });
    services.set(base, svc);
    const s = svc;
    povServiceFor(base).setPamTeardown((povId, ctx) => s.teardown(povId, ctx));
    // Once a POV's control node enrols, wire it (when its tenants are saved): the Gateway
    // container needs the agent. A failure stays on the wiring job, never on the install.
    base.jobs.onChange((job) => {
      if (job.kind !== JOB_KIND.controlNodeInstall || job.state !== 'succeeded' || !job.subject) return;
      try {
        const id = s.autoWire(job.subject);
        if (id) base.log.info('wiring a POV into BeyondTrust now that its control node enrolled', { povId: job.subject, jobId: id });
      } catch (err) {
        base.log.warn('could not start the BeyondTrust wiring after enrolment', { povId: job.subject, error: (err as Error).message });
      }
    });
    if (base.role === 'app') {
      const resumed = s.resumeInterrupted();
      if (resumed.length) base.log.warn('resumed BeyondTrust wiring jobs left running by an earlier process', { count: resumed.length });
    }
  }
  return svc;
}

export function pamHandlers(base: Base, wiring: PamWiring = {}): DomainHandlers<typeof pamMethods> {
  const svc = pamServiceFor(base, wiring);
  return {
    'pam.saveTenants': async (args) => svc.saveTenants(args),
    'pam.test': async ({ povId, product }) => svc.test(povId, product),
    'pam.wire': async ({ povId }) => ({ jobId: svc.startWire(povId) }),
    'pam.status': async ({ povId }) => svc.status(povId),
    'pam.unwire': async ({ povId }) => ({ jobId: svc.startUnwire(povId) }),
    'pam.getSettings': async () => svc.getSettings(),
    'pam.saveSettings': async (args) => svc.saveSettings(args),
  };
}
