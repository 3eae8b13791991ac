import type { povMethods } from '../../../shared/contract/pov';
import { ReadinessService } from '../../services/pov/readiness';
import { listShares, toShareView } from '../../services/share/repo';
import type { Base } from '../base';
import { pamServiceFor } from './pam';
import { povServiceFor } from './pov';
import type { DomainHandlers } from './skytap';

/**
 * pov.readiness, and pov.list with each row's readiness badge (so the list needs no request per
 * row). allHandlers spreads these after povHandlers: this pov.list replaces the plain one.
 */
export function readinessHandlers(base: Base): Pick<DomainHandlers<typeof povMethods>, 'pov.readiness' | 'pov.list'> {
  const povs = () => povServiceFor(base);
  const svc = readinessService(base);
  return {
    'pov.readiness': async (args) => svc.of(args.id),
    'pov.list': async (args) => ({ povs: await svc.badges(povs().list(args.includeDestroyed ?? false)) }),
  };
}

/** The readiness badges and checklists of one Base (pov.list's rows and pov.updated's carry the badge). */
export function readinessService(base: Base): ReadinessService {
  // Looked up at call time: pamHandlers builds the PamService with its wiring options first.
  const povs = () => povServiceFor(base);
  return new ReadinessService({
    pov: (id) => povs().get(id).pov,
    pam: (id) => pamServiceFor(base).status(id),
    // From the database only: the badge needs expiry and liveness, not the keychain's password flag.
    shares: (id) => listShares(base.db, id).map((s) => toShareView(s, false)),
    jobs: (id) => base.jobs.list({ subject: id, includeRoutine: true, limit: 100 }),
  });
}
