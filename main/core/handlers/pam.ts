import type { pamMethods } from '../../../shared/contract/pam';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function pamHandlers({ pam }: Pick<Services, 'pam'>): DomainHandlers<typeof pamMethods> {
  return {
    'pam.saveTenants': async (args) => pam.saveTenants(args),
    'pam.test': async ({ povId, product }) => pam.test(povId, product),
    'pam.wire': async ({ povId }) => ({ jobId: pam.startWire(povId) }),
    'pam.status': async ({ povId }) => pam.status(povId),
    'pam.unwire': async ({ povId }) => ({ jobId: pam.startUnwire(povId) }),
    'pam.getSettings': async () => pam.getSettings(),
    'pam.saveSettings': async (args) => pam.saveSettings(args),
  };
}
