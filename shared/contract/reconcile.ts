import { jobStarted, method, noArgs, lazyMethods } from './define';

/** The sweep that reads every managed Skytap environment and updates the POV rows (also every ten minutes). */
export const reconcileMethods = lazyMethods({
  'reconcile.runNow': () =>
    method('Run the reconcile sweep now (one paginated read of every managed environment)', noArgs, jobStarted, { job: true }),
});
