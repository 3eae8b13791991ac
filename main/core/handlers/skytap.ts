import type { skytapMethods } from '../../../shared/contract/skytap';
import { testConnection } from '../../services/skytap/test-connection';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function skytapHandlers({ skytap }: Pick<Services, 'skytap'>): DomainHandlers<typeof skytapMethods> {
  return {
    'skytap.testConnection': async () => {
      const r = await testConnection(await skytap.config());
      return {
        outcome: r.outcome,
        good: r.ok,
        message: r.message,
        remedy: r.remedy,
        templateCount: r.templateCount,
        reason: r.reason,
        scope: r.projectScoped ? 'project' : 'account',
      };
    },
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
