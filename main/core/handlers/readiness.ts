import type { povMethods } from '../../../shared/contract/pov';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

/** pov.readiness, and pov.list with each row's readiness badge (so the list needs no request per row). */
export function readinessHandlers({
  pov,
  readiness,
}: Pick<Services, 'pov' | 'readiness'>): Pick<DomainHandlers<typeof povMethods>, 'pov.readiness' | 'pov.list'> {
  return {
    'pov.readiness': async (args) => readiness.of(args.id),
    'pov.list': async (args) => ({ povs: await readiness.badges(pov.list(args.includeDestroyed ?? false)) }),
  };
}
