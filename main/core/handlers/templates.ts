import type { templatesMethods } from '../../../shared/contract/templates';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function templatesHandlers({ templates }: Pick<Services, 'templates'>): DomainHandlers<Omit<typeof templatesMethods, 'templates.runnerScript'>> {
  return {
    'templates.bake': async (args) => ({ jobId: templates.bake(args) }),
    'templates.baked': async () => ({ images: templates.list() }),
    'templates.export': async (args) => ({ jobId: templates.exportImage(args) }),
  };
}
