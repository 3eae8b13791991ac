/**
 * The lab's control-node image: Debian bookworm baked by the BakeService (runner, docker.io,
 * open-vm-tools) with the test agent preloaded (test/lab/agent-image.ts), proven by the bake's own
 * proof boot (the runner ran the probe and `docker image inspect povdesk/test-agent:1` found it).
 * The baked qcow2 is cached outside the checkout, beside the templates suites' caches, keyed by
 * the sha256 of its inputs: the runner script, the agent image tar, the preload unit and script,
 * and the recipe below. A warm call only imports it into the given manager as
 * `povdesk-control-node`. test/bake/bake.test.ts bakes this same recipe as its fresh Debian
 * bake and keeps the result here (keepControlNodeDisk), so a cold cache (every CI run) pays for
 * one Debian bake, not two. Whichever file asks first bakes; in a fresh clone that is bake.test.ts,
 * since Vitest without recorded timings runs larger files first and it is the largest of them.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runnerScript } from '../../main/services/control-node/runner';
import { preloadScript, preloadUnit } from '../../main/services/bake/preload';
import type { VmManagerClient } from '../../main/vm-api/client';
import type { BakeArgs } from '../../shared/contract/bake';
import { bakeWorld, CACHE, type BakeWorld } from '../bake/support';
import { AGENT_REF, agentImageTar } from './agent-image';

export const CONTROL_NODE_IMAGE = 'povdesk-control-node';
/** Bump when the bake changes in a way the inputs below do not show. */
const RECIPE = { version: 2, source: { debian: 'bookworm' }, docker: 'auto', preload: [AGENT_REF] } as const;

export function controlNodeImageKey(): string {
  const h = createHash('sha256');
  for (const part of [runnerScript().script, agentImageTar(), preloadScript(), preloadUnit(), JSON.stringify(RECIPE)]) {
    h.update(createHash('sha256').update(part).digest('hex'));
  }
  return h.digest('hex').slice(0, 16);
}

export interface ControlNodeImage {
  name: typeof CONTROL_NODE_IMAGE;
  agentRef: typeof AGENT_REF;
  /** the cached qcow2 */
  disk: string;
  /** whether this call baked it (false: from the cache) */
  baked: boolean;
  bakeSeconds: number | null;
  importSeconds: number;
}

/** The recipe as `bake.start` arguments in the bake world `w` (the agent's tar written into its sources). */
export function controlNodeBakeArgs(w: BakeWorld): BakeArgs {
  const tar = join(w.sources, 'povdesk-test-agent.tar');
  writeFileSync(tar, agentImageTar());
  return { source: RECIPE.source, name: CONTROL_NODE_IMAGE, docker: RECIPE.docker, preloadImages: [tar] };
}

const cachedDisk = () => join(CACHE, 'control-node', controlNodeImageKey(), 'disk.qcow2');

/**
 * Keeps the image a bake of controlNodeBakeArgs registered in `w`'s manager as the cached
 * control-node disk, unless one is cached already. Returns whether it did.
 */
export async function keepControlNodeDisk(w: BakeWorld): Promise<boolean> {
  const disk = cachedDisk();
  if (existsSync(disk)) return false;
  const img = (await w.client.localImages()).find((i) => i.name === CONTROL_NODE_IMAGE);
  if (!img?.path || !img.disk) throw new Error('the bake succeeded but its image is not in the bake manager');
  mkdirSync(dirname(disk), { recursive: true });
  // copied then renamed: a reader never sees half a disk
  await copyFile(join(img.path, img.disk), `${disk}.tmp-${process.pid}`);
  renameSync(`${disk}.tmp-${process.pid}`, disk);
  return true;
}

/** The cached control-node qcow2, baked first when its inputs changed (no manager of the caller's involved). */
export async function controlNodeDisk(log: (l: string) => void = () => {}): Promise<{ disk: string; bakeSeconds: number | null }> {
  const disk = cachedDisk();
  let bakeSeconds: number | null = null;
  if (!existsSync(disk)) {
    const t0 = Date.now();
    const w = await bakeWorld();
    try {
      const id = w.svc.start(controlNodeBakeArgs(w));
      const job = await w.jobs.wait(id);
      if (job.state !== 'succeeded') {
        const tail = w.jobs
          .log(id)
          .map((l) => l.message)
          .slice(-40)
          .join('\n');
        throw new Error(`the control-node bake ${job.state}: ${job.error?.message ?? ''}\n${tail}`);
      }
      await keepControlNodeDisk(w);
      bakeSeconds = Math.round((Date.now() - t0) / 1000);
      log(
        `control-node image baked in ${bakeSeconds} s ` +
          `(${JSON.stringify((job.result as { manifest?: { stages?: unknown } } | null)?.manifest?.stages ?? {})})`,
      );
    } finally {
      await w.close();
    }
  }
  return { disk, bakeSeconds };
}

/** Bakes (once per input change) and imports the control-node image into `client`'s manager, whose state dir is `stateDir`. */
export async function ensureControlNodeImage(
  client: VmManagerClient,
  stateDir: string,
  log: (l: string) => void = () => {},
): Promise<ControlNodeImage> {
  const { disk, bakeSeconds } = await controlNodeDisk(log);
  const t1 = Date.now();
  if (!(await client.localImages()).some((i) => i.name === CONTROL_NODE_IMAGE)) {
    const incoming = join(stateDir, 'incoming', `${process.pid}-${CONTROL_NODE_IMAGE}.qcow2`);
    mkdirSync(join(stateDir, 'incoming'), { recursive: true });
    // Not copyFileSync: the manager may run in this process, and a loop blocked for seconds gets
    // the client's kept-alive socket reset under it.
    await copyFile(disk, incoming);
    try {
      await client.importImage(incoming, CONTROL_NODE_IMAGE).catch(async (e: { code?: string }) => {
        // the import itself blocks an in-process manager's loop (qemu-img convert, sha256): a reset
        // socket may hide a finished import
        if (e.code !== 'unavailable' || !(await client.localImages()).some((i) => i.name === CONTROL_NODE_IMAGE)) throw e;
      });
    } finally {
      rmSync(incoming, { force: true });
    }
  }
  return {
    name: CONTROL_NODE_IMAGE,
    agentRef: AGENT_REF,
    disk,
    baked: bakeSeconds !== null,
    bakeSeconds,
    importSeconds: Math.round((Date.now() - t1) / 100) / 10,
  };
}
