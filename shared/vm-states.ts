/**
 * A local VM's states as the app shows them (no zod here: the renderer imports this file), and the
 * ones in which its QEMU runs, so it has a console, can be stopped and is reachable over SSH.
 */
export const VM_STATES = [
  'creating',
  'installing',
  'booting',
  'attesting',
  'ready',
  'running',
  'stopping',
  'stopped',
  'failed',
  'deleting',
] as const;
export const LIVE_VM_STATES: readonly string[] = ['installing', 'booting', 'attesting', 'ready', 'running'];
