import { AppError, isErrorCode, type ErrorCode } from '../../../shared/contract/errors';

/**
 * The vm-manager's error codes (its REST body {"error":{"code","message"}}) as the app's codes;
 * the manager's message is kept, since it already says what to do.
 */
const MAP: Record<string, ErrorCode> = {
  invalid_request: 'invalid_request',
  not_found: 'not_found',
  conflict: 'conflict',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  unavailable: 'unavailable',
  timeout: 'timeout',
  unsupported: 'unsupported',
  // the VM itself failed (QEMU exited, the guest never came up): the request was fine
  vm_failed: 'unavailable',
  internal: 'internal',
  internal_error: 'internal',
};

export function toAppError(err: unknown, what: string): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string') {
    const mapped = MAP[code] ?? (isErrorCode(code) ? code : 'internal');
    return new AppError(mapped, message, { managerCode: code, call: what });
  }
  return new AppError('internal', `${what}: ${message}`);
}

/** Runs one manager call and turns whatever it throws into an AppError. */
export async function managerCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toAppError(err, what);
  }
}
