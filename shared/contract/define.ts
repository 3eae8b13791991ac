import { z } from 'zod';
import { lazySchema } from '../lazy-schema';

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

export const jobStarted = lazySchema(() => z.strictObject({ jobId: z.string() }));

/** An argument object with no fields: `{}` and nothing else. */
export const noArgs = lazySchema(() => z.strictObject({}));
export const ok = lazySchema(() => z.strictObject({ ok: z.literal(true) }));

/**
 * A domain's methods, each entry built on first read. The host's cold start evaluates every
 * contract file, and the zod objects inside each `method(...)` call were a large part of that
 * work; a process builds only the entries it reads (the first answer needs one). An entry is an
 * enumerable getter that builds its value once (the same instance through `methods` and through
 * the domain's object), so `Object.keys` and `in` behave as on a plain object; join such objects
 * with `joinLazy` (a spread would build every entry).
 */
export function lazyMethods<T extends Record<string, () => MethodDef>>(defs: T): { readonly [K in keyof T]: ReturnType<T[K]> } {
  const out = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const [name, build] of Object.entries(defs)) {
    let value: MethodDef | undefined;
    Object.defineProperty(out, name, {
      enumerable: true,
      get: () => (value ??= build()),
    });
  }
  return out;
}

/** Joins lazy method objects without reading their entries (an object spread would build them all). */
export function joinLazy<T extends object[]>(...parts: T): UnionToIntersection<T[number]> {
  const out = {};
  for (const p of parts) Object.defineProperties(out, Object.getOwnPropertyDescriptors(p));
  return out as UnionToIntersection<T[number]>;
}
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
