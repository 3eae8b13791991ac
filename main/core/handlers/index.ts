import type { Base, Services } from '../base';
import type { Handlers } from '../dispatch';
import { controlNodeHandlers } from './control-node';
import { coreHandlers } from './core';
import { doctorHandlers } from './doctor';
import { pamHandlers } from './pam';
import { povHandlers } from './pov';
import { readinessHandlers } from './readiness';
import { shareHandlers } from './share';
import { skytapHandlers } from './skytap';
import { sshHandlers } from './ssh';
import { bakeHandlers } from './bake';
import { labTemplatesHandlers } from './lab-templates';
import { vmHandlers } from './vm';
import { vmDiagnostics } from '../diagnostics';

/** Every contract method, mapped to the service that answers it. */
export function allHandlers(base: Base, services: Services): Handlers {
  return {
    ...coreHandlers(base, [vmDiagnostics(services.vm)]),
    ...skytapHandlers(services),
    ...povHandlers(services),
    ...readinessHandlers(services),
    ...controlNodeHandlers(services),
    ...pamHandlers(services),
    ...vmHandlers(services),
    ...sshHandlers(services, base.log),
    ...shareHandlers(services),
    ...bakeHandlers(services),
    ...labTemplatesHandlers(services),
    ...doctorHandlers(services),
  };
}
