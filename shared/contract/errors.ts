import { z } from 'zod';

/** The closed set of error codes that may cross any boundary (IPC, socket, CLI, vm-manager REST). */
export const ERROR_CODES = [
  'invalid_request',
  'not_found',
  'conflict',
  'unauthorized',
  'forbidden',
  'unavailable',
  'rate_limited',
  'timeout',
  'cancelled',
  'unsupported',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const wireErrorSchema = z
  .object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    detail: z.unknown().optional(),
  })
  .strict();
export type WireError = z.infer<typeof wireErrorSchema>;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly detail?: unknown;
  constructor(code: ErrorCode, message: string, detail?: unknown) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    if (detail !== undefined) this.detail = detail;
  }
  toWire(): WireError {
    return this.detail === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, detail: this.detail };
  }
}

/** Anything thrown becomes a WireError; unknown errors are `internal` and keep only their message. */
export function toWireError(err: unknown): WireError {
  if (err instanceof AppError) return err.toWire();
  if (err && typeof err === 'object' && 'code' in err && 'message' in err) {
    const parsed = wireErrorSchema.safeParse({
      code: (err as { code: unknown }).code,
      message: (err as { message: unknown }).message,
    });
    if (parsed.success) return parsed.data;
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'internal', message };
}

export function fromWireError(e: WireError): AppError {
  return new AppError(e.code, e.message, e.detail);
}

/** Turns a zod failure into a message that names the field. */
export function describeZodError(prefix: string, error: z.ZodError): string {
  const parts = error.issues.slice(0, 5).map((i) => {
    const path = i.path.length ? i.path.map(String).join('.') : '(root)';
    return `${path}: ${i.message}`;
  });
  return `${prefix}: ${parts.join('; ')}`;
}
