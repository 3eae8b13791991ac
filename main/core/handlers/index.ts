import type { Base } from '../base';
import type { Handlers } from '../dispatch';
import { coreHandlers } from './core';

/** Every domain's handlers, bound to one Base. */
export function allHandlers(base: Base): Handlers {
  return {
    ...coreHandlers(base),
  };
}
