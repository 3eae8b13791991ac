import type { JobRunner } from '../services/jobs/runner';
import type { OwnerEndpoint } from './owner-endpoint';

/**
 * When a core that a one-shot process built (`povdesk call`, `povdesk mcp`) may close. Other
 * `povdesk call`s reach it as the owner and start jobs in it, so its own call being done is not
 * enough: it retires once no job runs here and no client is connected (each may still be following
 * a job it started here, or about to start one). At that moment the endpoint starts turning new
 * clients away (they retry and find the next owner), so nothing is accepted that the close would cut off.
 */
export interface Retirement {
  /**
   * True (and new clients refused from now on) when idle; false, changing nothing, otherwise.
   * `own`: jobs the process itself started and lets the close end (`povdesk mcp` closed by its client).
   */
  tryRetire(own?: ReadonlySet<string>): boolean;
  /** Resolves once tryRetire(own) succeeds. */
  retired(own?: ReadonlySet<string>): Promise<void>;
  /** fn runs whenever idleness may have begun: a job changed or a client went (the next turn). */
  onMaybeIdle(fn: () => void): void;
}

export function retirement(
  jobs: Pick<JobRunner, 'busy' | 'onChange'>,
  endpoint: Pick<OwnerEndpoint, 'clients' | 'onClientGone' | 'refuseNew'> | null,
): Retirement {
  const tryRetire = (own: ReadonlySet<string> = new Set()) => {
    if (jobs.busy().some((id) => !own.has(id)) || (endpoint?.clients() ?? 0) > 0) return false;
    endpoint?.refuseNew();
    return true;
  };
  const watchers: (() => void)[] = [];
  // A finished job leaves the runner's table right after its last change is announced: look next turn.
  const changed = () => {
    if (watchers.length) setImmediate(() => watchers.forEach((fn) => fn()));
  };
  jobs.onChange(changed);
  endpoint?.onClientGone(changed);
  return {
    tryRetire,
    retired: (own) =>
      new Promise<void>((resolve) => {
        let done = false;
        const check = () => {
          if (!done && tryRetire(own)) {
            done = true;
            resolve();
          }
        };
        watchers.push(check);
        check();
      }),
    onMaybeIdle: (fn) => void watchers.push(fn),
  };
}
