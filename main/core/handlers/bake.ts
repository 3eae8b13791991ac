import type { bakeMethods } from '../../../shared/contract/bake';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function bakeHandlers({ templates }: Pick<Services, 'templates'>): DomainHandlers<Omit<typeof bakeMethods, 'bake.runnerScript'>> {
  return {
    'bake.start': async (args) => ({ jobId: templates.bake(args) }),
    'bake.list': async () => ({ images: templates.list() }),
    'bake.export': async (args) => ({ jobId: templates.exportImage(args) }),
  };
}
