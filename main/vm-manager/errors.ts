/** Errors of the vm-manager daemon. It shares only shared/ with the app, so it has its own small set. */
export type VmmCode =
  | 'invalid_request'
  | 'not_found'
  | 'conflict'
  | 'unauthorized'
  | 'forbidden'
  | 'unavailable'
  | 'timeout'
  | 'vm_failed'
  | 'unsupported'
  | 'internal';

export const STATUS: Record<VmmCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  internal: 500,
  vm_failed: 500,
  unsupported: 501,
  unavailable: 503,
  timeout: 504,
};

export class VmmError extends Error {
  constructor(
    public code: VmmCode,
    message: string,
  ) {
    super(message);
    this.name = 'VmmError';
  }
}
