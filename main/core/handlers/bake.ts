import type { bakeMethods } from '../../../shared/contract/bake';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

export function bakeHandlers({ bake }: Pick<Services, 'bake'>): DomainHandlers<Omit<typeof bakeMethods, 'bake.runnerScript'>> {
  return {
    'bake.start': async (args) => ({ jobId: bake.start(args) }),
    'bake.list': async () => ({ images: bake.list() }),
    'bake.export': async (args) => ({ jobId: bake.exportImage(args) }),
  };
}
