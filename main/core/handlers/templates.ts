import type { templatesMethods } from '../../../shared/contract/templates';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function templatesHandlers({ templates, labTemplates }: Pick<Services, 'templates' | 'labTemplates'>): DomainHandlers<Omit<typeof templatesMethods, 'templates.runnerScript'>> {
  return {
    'templates.bake': async (args) => ({ jobId: templates.bake(args) }),
    'templates.baked': async () => ({ images: templates.list() }),
    'templates.export': async (args) => ({ jobId: templates.exportImage(args) }),
    'templates.list': async ({ platform }) => ({ platform, templates: await labTemplates.list(platform) }),
    'templates.createLocal': async (args) => ({ template: await labTemplates.createLocal(args) }),
    'templates.updateLocal': async ({ id, ...rest }) => ({ template: await labTemplates.updateLocal(id, rest) }),
    'templates.deleteLocal': async ({ id }) => {
      labTemplates.deleteLocal(id);
      return {};
    },
  };
}
