export function electronBinary(root: string): { path: string } | { reason: string };
export function fetchElectron(
  root: string,
  run: (cmd: string, args: string[], opts: { timeout: number }) => { status: number | null; signal?: NodeJS.Signals | null; error?: Error },
  timeoutMs?: number,
): { path: string } | { reason: string };
