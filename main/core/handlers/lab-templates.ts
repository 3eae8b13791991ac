import type { labTemplatesMethods } from '../../../shared/contract/lab-templates';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function labTemplatesHandlers({ labTemplates }: Pick<Services, 'labTemplates'>): DomainHandlers<typeof labTemplatesMethods> {
  return {
    'labTemplates.list': async ({ platform }) => ({ platform, templates: await labTemplates.list(platform) }),
    'labTemplates.create': async (args) => ({ template: await labTemplates.create(args) }),
    'labTemplates.update': async ({ id, ...rest }) => ({ template: await labTemplates.update(id, rest) }),
    'labTemplates.delete': async ({ id }) => {
      labTemplates.delete(id);
      return {};
    },
  };
}
