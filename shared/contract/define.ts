import { z } from 'zod';

/**
 * One entry of the contract. `job: true` means the result is `{ jobId }` and the work continues
 * as a job (see the jobs.* methods and the `jobs.update` stream).
 */
export interface MethodDef<A extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  readonly summary: string;
  readonly args: A;
  readonly result: R;
  readonly job?: boolean;
}

export function method<A extends z.ZodType, R extends z.ZodType>(
  summary: string,
  args: A,
  result: R,
  opts: { job?: boolean } = {},
): MethodDef<A, R> {
  return { summary, args, result, ...opts };
}

/**
 * A stream of events from core to UI, keyed by an id (a job id, a VM id, an ssh session id).
 * `ack: 'manual'` streams are flow-controlled: the consumer acknowledges the bytes it has
 * rendered and the producer pauses while too many are unacknowledged.
 */
export interface StreamDef<D extends z.ZodType = z.ZodType> {
  readonly summary: string;
  readonly data: D;
  readonly ack: 'auto' | 'manual';
}

export function stream<D extends z.ZodType>(summary: string, data: D, ack: 'auto' | 'manual' = 'auto'): StreamDef<D> {
  return { summary, data, ack };
}

export const jobStarted = z.strictObject({ jobId: z.string() });

/** An argument object with no fields: `{}` and nothing else. */
export const noArgs = z.strictObject({});
export const ok = z.strictObject({ ok: z.literal(true) });
