import type { Base } from '../base';
import type { Handlers } from '../dispatch';
import { controlNodeHandlers } from './controlNode';
import { coreHandlers } from './core';
import { povHandlers } from './pov';
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
    ...controlNodeHandlers(base),
    ...vmHandlers(base),
    ...sshHandlers(base),
    ...templatesHandlers(base),
  };
}
