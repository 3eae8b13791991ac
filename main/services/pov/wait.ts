import { AppError } from '../../../shared/contract/errors';
import type { Environment } from '../skytap/schemas';
import type { Db } from '../store/db';
import { updatePov } from './repo';
import { sleep as abortableSleep } from '../../lib/sleep';
import type { LifecycleDeps, SkytapApi, StepContext } from './types';

/**
 * Polls GET /v2/configurations/{id} (the client adds keep_idle=true) until `done` says so,
 * recording every reading on the row: runstate, the rate_limited badge and last_confirmed_at.
 * A rate-limited operation is never re-submitted here or anywhere: Skytap has queued it and
 * retries it itself, so the only right move is to keep polling.
 */
export async function pollEnvironment(
  deps: LifecycleDeps,
  api: SkytapApi,
  povId: string,
  envId: string,
  ctx: StepContext,
  what: string,
  done: (env: Environment) => boolean,
): Promise<Environment> {
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? abortableSleep;
  const pollMs = deps.pollMs ?? 5000;
  const timeoutMs = deps.waitTimeoutMs ?? 30 * 60_000;
  const started = now().getTime();
  let polls = 0;
  let sawRateLimited = false;
  for (;;) {
    const env = await api.getEnvironment(envId);
    if (env === null) {
      throw new AppError(
        'not_found',
        `Environment ${envId} no longer exists in Skytap (404) while waiting for it to be ${what}; it was deleted outside POV Desk.`,
      );
    }
    recordReading(deps.db, povId, env, now().toISOString());
    if (env.rate_limited && !sawRateLimited) {
      sawRateLimited = true;
      ctx.log(`Skytap has queued this operation under rate limiting (rate_limited=true); polling, not re-submitting`, 'warn');
    }
    if (done(env)) return env;
    polls++;
    if (now().getTime() - started > timeoutMs) {
      throw new AppError(
        'timeout',
        `Environment ${envId} was still ${env.runstate}${env.rate_limited ? ' (rate limited by Skytap)' : ''} after ` +
          `${Math.round(timeoutMs / 60000)} min of waiting to be ${what}. Check it in Skytap, then run the step again.`,
      );
    }
    ctx.progress(`wait until ${what}`, null, `Skytap says ${env.runstate}${env.rate_limited ? ', rate limited' : ''} (poll ${polls})`);
    await sleep(pollMs, ctx.signal);
  }
}

/** Stores one confirmed reading of the environment on the row. */
export function recordReading(db: Db, povId: string, env: Environment, at: string): void {
  updatePov(db, povId, { runstate: env.runstate, rate_limited: env.rate_limited ? 1 : 0, last_confirmed_at: at }, at);
}
