export function prepareElectronNative(
  root: string,
  run: (cmd: string, args: string[], opts?: object) => { status: number | null; signal?: string | null },
): { ok: true; modulesDir: string; rebuilt: boolean } | { ok: false; why: string };
