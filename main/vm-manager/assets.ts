import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A file the vm-manager ships beside its code (`guest/init.sh`, `guest/metadata-proxy.cjs`,
 * `attest/guest-quote.sh`). From the sources it sits under main/vm-manager/; in a build the copy
 * step in electron.vite.config.ts puts the same tree under out/main/vm-manager-assets/, and the
 * bundled module may live in out/main or out/main/chunks.
 */
export function vmAsset(rel: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, rel), join(here, 'vm-manager-assets', rel), join(here, '..', 'vm-manager-assets', rel)];
  return candidates.find((c) => existsSync(c)) ?? candidates[0]!;
}
