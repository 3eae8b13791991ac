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

/** How an error crosses a boundary. (Its zod schema is in wire-schema.ts; this file stays zod-free for the renderer.) */
export interface WireError {
  code: ErrorCode;
  message: string;
  detail?: unknown;
}

export function isErrorCode(v: unknown): v is ErrorCode {
  return typeof v === 'string' && (ERROR_CODES as readonly string[]).includes(v);
}

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
    const { code, message } = err as { code: unknown; message: unknown };
    if (isErrorCode(code) && typeof message === 'string') return { code, message };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'internal', message };
}

export function fromWireError(e: WireError): AppError {
  return new AppError(e.code, e.message, e.detail);
}

/**
 * The one zod-failure formatter: `field: message; …` for the first five issues, the value itself
 * named `root` (e.g. 'body' or 'arguments' where that reads better than '(root)').
 */
export function listZodIssues(error: { issues: { path: PropertyKey[]; message: string }[] }, root = '(root)'): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : root}: ${i.message}`)
    .join('; ');
}

/** Turns a zod failure into a message that names the field. */
export function describeZodError(prefix: string, error: { issues: { path: PropertyKey[]; message: string }[] }): string {
  return `${prefix}: ${listZodIssues(error)}`;
}
