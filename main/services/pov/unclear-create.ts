import { AppError, toWireError } from '../../../shared/contract/errors';
import type { Db } from '../store/db';
import type { Environment } from '../skytap/schemas';
import type { LabEnvironment, LabPlatform } from '../lab-platforms/platform';
import { updatePov, type PovRow } from './repo';
import type { StepContext } from './types';

/**
 * A create whose outcome is unknown (a timeout, a 5xx, a connection lost after the request went
 * out, or a process killed while the POST was in flight) may still have made an environment, and
 * Skytap's listings can lag behind a create. Such a row is `failed` with env_id NULL and
 * create_sent_at set ("a create may be outstanding"); the reconcile sweep looks it up by its
 * tagged name until CREATE_CHECK_MS after create_sent_at, adopts it when it appears, and only
 * when the bound passes with nothing found says that nothing is billing. A create is never re-sent
 * while its outcome is unknown.
 */
export const CREATE_CHECK_MS = 30 * 60_000;

/** The environment an earlier, interrupted create made for this row (by its tagged name). */
export function findAdoptable(p: LabPlatform, row: PovRow): Promise<LabEnvironment | null> {
  return p.findByName(row.env_name);
}

export function isMaybeCreated(err: unknown): boolean {
  const detail = toWireError(err).detail as { maybeCreated?: unknown } | undefined;
  return detail?.maybeCreated === true;
}

/** True while the row is an unclear create the sweep still checks. */
export function isCheckingCreate(row: PovRow): boolean {
  return row.state === 'failed' && row.env_id === null && row.create_sent_at !== null;
}

export function checkDeadline(row: Pick<PovRow, 'create_sent_at'>, checkMs = CREATE_CHECK_MS): Date {
  return new Date(Date.parse(row.create_sent_at ?? '') + checkMs);
}

function hhmm(d: Date): string {
  return d.toISOString().slice(11, 16) + ' UTC';
}

/** Records "may exist — being checked" on the row; the caller then ends its job with `error`. */
export function markCreateUnclear(db: Db, row: PovRow, cause: string, at: string, checkMs = CREATE_CHECK_MS): AppError {
  const until = checkDeadline(row, checkMs);
  const message =
    `The environment may exist — being checked. ${cause} Skytap does not list an environment named "${row.env_name}" yet; ` +
    `POV Desk keeps looking for it until ${hhmm(until)} and adopts it if it appears. Do not create this POV again before then.`;
  updatePov(db, row.id, { state: 'failed', error_message: message }, at);
  return new AppError('unavailable', message, { maybeCreated: true });
}

export interface UnclearSweep {
  checked: number;
  /** Rows that got their environment (the caller resumes their provisioning). */
  adopted: string[];
  /** Rows whose bound passed with nothing found: nothing is billing for them. */
  settled: number;
}

/**
 * One look at every unclear create against a listing the sweep already read. Adopting commits the
 * env id and puts the row back to `provisioning` so its create job can finish the work.
 */
export function sweepUnclearCreates(db: Db, envs: Environment[], ctx: StepContext, now: Date, checkMs = CREATE_CHECK_MS): UnclearSweep {
  const rows = (
    db.prepare("SELECT * FROM povs WHERE state = 'failed' AND env_id IS NULL AND create_sent_at IS NOT NULL").all() as PovRow[]
  ).filter(isCheckingCreate);
  const out: UnclearSweep = { checked: rows.length, adopted: [], settled: 0 };
  const at = now.toISOString();
  for (const row of rows) {
    const env = envs.find((e) => e.name === row.env_name);
    if (env) {
      updatePov(
        db,
        row.id,
        {
          env_id: env.id,
          state: 'provisioning',
          runstate: env.runstate,
          rate_limited: env.rate_limited ? 1 : 0,
          last_confirmed_at: at,
          error_message: null,
        },
        at,
      );
      out.adopted.push(row.id);
      ctx.log(`environment ${env.id} of POV "${row.name}" appeared after an unclear create: adopted`, 'warn');
    } else if (now.getTime() > checkDeadline(row, checkMs).getTime()) {
      updatePov(
        db,
        row.id,
        {
          create_sent_at: null,
          error_message:
            `Skytap never listed an environment named "${row.env_name}" in the ${Math.round(checkMs / 60_000)} min after the create, ` +
            'so nothing from this POV is billing. Press Destroy to remove this row, then create the POV again.',
        },
        at,
      );
      out.settled++;
      ctx.log(`no environment appeared for POV "${row.name}" within the check window: nothing is billing`);
    }
  }
  return out;
}
