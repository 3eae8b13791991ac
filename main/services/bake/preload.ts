/**
 * Docker images baked into a template (bake.start `preloadImages`): docker-archive tars (the
 * `docker save` layout) picked from the allowed directories, checked here, copied into the guest
 * at bake time, and `docker load`ed by a oneshot unit at the first boot of each VM made from the
 * template — after docker.service, before the bootstrap runner starts, so a payload never runs
 * before its image is there. The tar is removed after its load succeeded (from that VM's disk;
 * the template keeps it).
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import { UNIT_NAME as RUNNER_UNIT } from '../control-node/runner';
import { allowedSource } from './source';
import { run, sha256File } from './tools';

export const PRELOAD_DIR = '/var/lib/povdesk/preload';
export const PRELOAD_UNIT = 'povdesk-preload-images.service';
export const PRELOAD_SCRIPT = '/usr/local/sbin/povdesk-preload-images';

/** A docker-archive's manifest.json, as `docker load` reads it. */
const manifestSchema = lazySchema(() =>
  z
    .array(
      z.object({
        Config: z.string().min(1),
        RepoTags: z
          .array(z.string().regex(/^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/, 'an image reference like name:tag'))
          .nullable()
          .optional(),
        Layers: z.array(z.string().min(1)),
      }),
    )
    .min(1),
);

export interface PreloadImage {
  path: string;
  /** the references `docker load` will tag (RepoTags of every image in the archive) */
  refs: string[];
  bytes: number;
  sha256: string;
}

/**
 * Checks each path (inside the allowed dirs, a regular file, a tar with a manifest.json naming at
 * least one tagged image) before the bake makes anything. Bad input: a clear error, nothing made.
 */
export async function checkPreloadImages(paths: string[], allowedDirs: string[], signal?: AbortSignal): Promise<PreloadImage[]> {
  const out: PreloadImage[] = [];
  for (const p of paths) {
    const file = allowedSource(p, allowedDirs);
    if (out.some((o) => o.path === file)) throw new AppError('invalid_request', `preloadImages names ${file} twice`);
    let text: string;
    try {
      text = await run('tar', ['-xOf', file, 'manifest.json'], { signal, what: `reading manifest.json from ${basename(file)}` });
    } catch (e) {
      if ((e as AppError).code === 'cancelled') throw e;
      throw new AppError(
        'invalid_request',
        `${file} is not a docker-archive tar (what \`docker save\` writes): it has no readable manifest.json`,
      );
    }
    let manifest: z.infer<typeof manifestSchema>;
    try {
      manifest = manifestSchema.parse(JSON.parse(text));
    } catch (e) {
      throw new AppError(
        'invalid_request',
        `${file}: its manifest.json is not a docker-archive manifest ` +
          `(${e instanceof z.ZodError ? e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : (e as Error).message})`,
      );
    }
    const refs = manifest.flatMap((m) => m.RepoTags ?? []);
    if (manifest.some((m) => !m.RepoTags?.length))
      throw new AppError(
        'invalid_request',
        `${file} holds an image without a tag: save it by name (docker save name:tag), so the payload can run it by name`,
      );
    const dup = refs.find((r) => out.some((o) => o.refs.includes(r)));
    if (dup) throw new AppError('invalid_request', `${dup} is in two of the preloadImages`);
    out.push({ path: file, refs, bytes: statSync(file).size, sha256: await sha256File(file) });
  }
  return out;
}

/** Loads every tar in PRELOAD_DIR; each is removed once its load succeeded. A failure stops the unit (and so the runner). */
export function preloadScript(): string {
  return `#!/bin/sh
# ${PRELOAD_SCRIPT}: load the Docker images baked into this template (POV Desk).
set -eu
for f in ${PRELOAD_DIR}/*.tar; do
  [ -e "$f" ] || continue
  echo "povdesk-preload: docker load -i $f"
  docker load -i "$f"
  rm -f "$f"
done
echo "povdesk-preload: done"
`;
}

/** Ordered before the runner and required by it: the runner never starts while a load is pending or failed. */
export function preloadUnit(): string {
  return `[Unit]
Description=POV Desk: load the Docker images baked into this template
Requires=docker.service
After=docker.service
Before=${RUNNER_UNIT}
ConditionPathExistsGlob=${PRELOAD_DIR}/*.tar

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${PRELOAD_SCRIPT}
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
RequiredBy=${RUNNER_UNIT}
`;
}
