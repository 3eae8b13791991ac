import { AppError } from '../../../shared/contract/errors';
import type { LabEnvironment, LabPlatform } from '../lab-platforms/platform';
import { capitalized, wordsOf } from '../lab-platforms/words';
import type { Db } from '../store/db';
import { updatePov } from './repo';
import { sleep as abortableSleep } from '../../lib/sleep';
import type { LifecycleDeps, StepContext } from './types';

/**
 * The lifecycle's waits on a platform (Skytap: GET /v2/configurations/{id}, which the client sends
 * with keep_idle=true; Local: the vm-manager's VM list). Every reading is recorded on the row:
 * runstate, the rate_limited badge and last_confirmed_at. A rate-limited operation is never
 * re-submitted here or anywhere: the platform (Skytap) has queued it and retries it itself, so
 * the only right move is to keep polling.
 */

function clock(deps: LifecycleDeps) {
  const now = deps.now ?? (() => new Date());
  return {
    now,
    started: now().getTime(),
    timeoutMs: deps.waitTimeoutMs ?? 30 * 60_000,
    sleep: deps.sleep ?? abortableSleep,
    pollMs: deps.pollMs ?? 5000,
  };
}

/** Polls until `done` says so; an environment that is gone fails the wait (deleted outside POV Desk). */
export async function pollEnvironment(
  deps: LifecycleDeps,
  p: LabPlatform,
  povId: string,
  envId: string,
  ctx: StepContext,
  what: string,
  done: (env: LabEnvironment) => boolean,
): Promise<LabEnvironment> {
  const w = wordsOf(p.id);
  const c = clock(deps);
  let polls = 0;
  let sawRateLimited = false;
  for (;;) {
    const env = await p.get(envId, { vms: false });
    if (env === null) {
      throw new AppError('not_found', `${w.goneWhileWaiting(envId)} while waiting for it to be ${what}; it was deleted outside POV Desk.`);
    }
    recordReading(deps.db, povId, env, c.now().toISOString());
    if (env.rateLimited && !sawRateLimited) {
      sawRateLimited = true;
      ctx.log(
        `${capitalized(w.name)} has queued this operation under rate limiting (rate_limited=true); polling, not re-submitting`,
        'warn',
      );
    }
    if (done(env)) return env;
    polls++;
    if (c.now().getTime() - c.started > c.timeoutMs) {
      throw new AppError(
        'timeout',
        `Environment ${envId} was still ${env.runstate}${env.rateLimited ? ` (rate limited by ${w.name})` : ''} after ` +
          `${Math.round(c.timeoutMs / 60000)} min of waiting to be ${what}. Check it in ${w.name}, then run the step again.`,
      );
    }
    ctx.progress(
      `wait until ${what}`,
      null,
      `${capitalized(w.name)} says ${env.runstate}${env.rateLimited ? ', rate limited' : ''} (poll ${polls})`,
    );
    await c.sleep(c.pollMs, ctx.signal);
  }
}

/** Polls until the environment is not busy (returned) or gone (null): never delete a busy one. */
export async function waitNotBusyOrGone(
  deps: LifecycleDeps,
  p: LabPlatform,
  povId: string,
  envId: string,
  ctx: StepContext,
): Promise<LabEnvironment | null> {
  const w = wordsOf(p.id);
  const c = clock(deps);
  for (;;) {
    const env = await p.get(envId, { vms: false });
    if (env === null) return null;
    recordReading(deps.db, povId, env, c.now().toISOString());
    if (env.runstate !== 'busy') return env;
    if (c.now().getTime() - c.started > c.timeoutMs) {
      throw new AppError(
        'timeout',
        `Environment ${envId} stayed busy for ${Math.round(c.timeoutMs / 60000)} min, so it was not deleted. Check it ` +
          `in ${w.name}, then press Destroy again.`,
      );
    }
    ctx.progress('wait until not busy', null, `${capitalized(w.name)} says busy`);
    await c.sleep(c.pollMs, ctx.signal);
  }
}

/** Polls until the platform no longer has the environment (Skytap: GET answers 404). */
export async function waitGone(deps: LifecycleDeps, p: LabPlatform, envId: string, ctx: StepContext): Promise<void> {
  const w = wordsOf(p.id);
  const c = clock(deps);
  for (;;) {
    const env = await p.get(envId, { vms: false });
    if (env === null) return;
    if (c.now().getTime() - c.started > c.timeoutMs) {
      throw new AppError(
        'timeout',
        `${capitalized(w.name)} still lists environment ${envId} (${env.runstate}) ` +
          `${Math.round(c.timeoutMs / 60000)} min after the delete.`,
      );
    }
    ctx.progress('wait until gone', null, `${capitalized(w.name)} still has it (${env.runstate})`);
    await c.sleep(c.pollMs, ctx.signal);
  }
}

/** Stores one confirmed reading of the environment on the row. */
export function recordReading(db: Db, povId: string, env: Pick<LabEnvironment, 'runstate' | 'rateLimited'>, at: string): void {
  updatePov(db, povId, { runstate: env.runstate, rate_limited: env.rateLimited ? 1 : 0, last_confirmed_at: at }, at);
}
