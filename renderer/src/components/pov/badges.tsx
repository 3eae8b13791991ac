import type { PovState } from '../../../../shared/contract/pov';

const TONE: Record<string, string> = {
  running: 'ok',
  suspended: 'warn',
  stopped: 'muted',
  halted: 'muted',
  busy: 'warn',
};

/** The last confirmed Skytap runstate; a POV with no environment shows its lifecycle state. */
export function RunstateBadge({ runstate, state }: { runstate: string | null; state: PovState }) {
  if (state === 'destroyed') return <span className="badge muted">destroyed</span>;
  if (!runstate) return <span className="badge muted">unknown</span>;
  return (
    <span className={`badge ${TONE[runstate] ?? ''}`} data-testid="runstate">
      {runstate}
    </span>
  );
}

export function RateLimitedBadge() {
  return (
    <span
      className="badge warn pov-rl"
      title={
        "Skytap queued this environment's power operation under rate limiting; it retries by itself. " +
        'POV Desk keeps polling and never re-submits it.'
      }
    >
      rate limited
    </span>
  );
}
