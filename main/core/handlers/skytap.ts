import type { skytapMethods, TestConnectionResult } from '../../../shared/contract/skytap';
import { testConnection, type ConnectionResult } from '../../services/skytap/test-connection';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

/** The service's result in the contract's words. */
function connectionView(r: ConnectionResult): TestConnectionResult {
  return {
    outcome: r.outcome,
    good: r.ok,
    message: r.message,
    remedy: r.remedy,
    templateCount: r.templateCount,
    reason: r.reason,
    scope: r.projectScoped ? 'project' : 'account',
  };
}

export function skytapHandlers({ skytap }: Pick<Services, 'skytap'>): DomainHandlers<typeof skytapMethods> {
  return {
    'skytap.testConnection': async () => connectionView(await testConnection(await skytap.config())),
    // Settings → Test connection: what is in the form, saved or not
    'skytap.testForm': async (form) => connectionView(await testConnection(await skytap.configWith(form))),
    'skytap.listTemplates': async () => {
      // The provisioning (default) budget: only Test connection asks for one retry (seeds), so a
      // rate-limited account makes the catalogue wait rather than fail the create dialog.
      const list = await (await skytap.client()).listTemplates();
      return {
        templates: list.map((t) => ({
          id: t.id,
          name: t.name,
          description: t.description ?? null,
          vmCount: t.vm_count ?? (t.vms.length || null),
          region: t.region ?? null,
          busy: t.busy,
        })),
      };
    },
  };
}
