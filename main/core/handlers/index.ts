import type { Base } from '../base';
import type { Handlers } from '../dispatch';
import { controlNodeHandlers } from './controlNode';
import { coreHandlers } from './core';
import { pamHandlers } from './pam';
import { povHandlers } from './pov';
import { readinessHandlers } from './readiness';
import { shareHandlers } from './share';
import { skytapHandlers } from './skytap';
import { sshHandlers } from './ssh';
import { templatesHandlers } from './templates';
import { vmDiagnostics, vmHandlers } from './vm';

/** Every domain's handlers, bound to one Base. */
export function allHandlers(base: Base): Handlers {
  return {
    ...coreHandlers(base, [vmDiagnostics(base)]),
    ...skytapHandlers(base),
    ...povHandlers(base),
    // after povHandlers: its pov.list adds each row's readiness badge
    ...readinessHandlers(base),
    ...controlNodeHandlers(base),
    ...pamHandlers(base),
    ...vmHandlers(base),
    ...sshHandlers(base),
    ...shareHandlers(base),
    ...templatesHandlers(base),
  };
}
