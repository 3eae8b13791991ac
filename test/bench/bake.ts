// Template bake: time by stage, and the exported OVA's size against the used bytes of its disk.
// - In the bench runner (budget 300 s): one bake, sized to fit with a margin. Its source is the
//   lab's cached control-node image (test/lab/control-node-image.ts: a Debian bookworm baked by
//   this same BakeService with Docker, cached keyed by its inputs; the lab suites and bench
//   local-pov use it, so in npm test it is warm): a re-bake through every stage (source, inspect,
//   packages, bake, register, proof) with Docker present and nothing to install, then the OVA
//   export of its result. The fresh Debian bake by stage is what test/bake/bake.test.ts
//   prints in the same npm test ("bake debian: N s, stages {...}"); repeating it here cost ~190 s
//   of a 241 s bench. Without the control-node image in the cache, the bench bakes a fresh Debian
//   on the suites' cache as before (labelled cold or warm by what it found).
// - With --cold (by hand; a cold base build alone takes minutes, past the runner's budget): an empty
//   cache dir, then the same cache again; ratio warm/cold of the whole bake, target ≤ 0.7 (the base
//   build is most of a cold bake).
// - OVA bytes / the baked qcow2's allocated data bytes (qemu-img map): the stream-optimized VMDK
//   is compressed, target ≤ 1.
// Boots a VM and runs libguestfs: minutes. Run alone: `npx tsx test/bench/bake.ts`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { JobRunner } from '../../main/services/jobs/runner';
import { openDatabase } from '../../main/services/store/db';
import { BakeService } from '../../main/services/bake/service';
import { VmManagerClient } from '../../main/vm-api/client';
import { serve } from '../../main/vm-manager/server';
import { controlNodeImageKey } from '../lab/control-node-image';
import { needs } from '../support/system';
import { CACHE } from '../bake/support';

if (needs(['mmdebstrap', 'guestfish', 'qemu-system-x86_64', 'qemu-img', 'swtpm'])) {
  console.log('bench bake: skipped (missing system programs)');
  process.exit(0);
}

const home = mkdtempSync(join(tmpdir(), 'bench-bake-'));
const coldRun = process.argv.includes('--cold');
const cache = coldRun ? join(home, 'cache') : CACHE;
const baked = join(CACHE, 'control-node', controlNodeImageKey(), 'disk.qcow2');
const rebake = !coldRun && existsSync(baked);
const warmCache = existsSync(join(CACHE, 'debian')) && readdirSync(join(CACHE, 'debian')).length > 0;
const state = join(home, 'vm-manager');
const m = await serve({ stateDir: state, token: 'bench' });
const client = new VmManagerClient(m.url, 'bench', 900_000);
const db = openDatabase(join(home, 'db.sqlite'));
const jobs = new JobRunner(db);
const svc = new BakeService({
  home,
  jobs,
  allowedDirs: [home, dirname(baked)],
  cacheDir: cache,
  vmm: async () => ({ client, stateDir: state }),
});

async function bake(name: string, source: string | { debian: 'bookworm' } = { debian: 'bookworm' }) {
  const t = performance.now();
  const job = await jobs.wait(svc.start({ source, name }));
  if (job.state !== 'succeeded') throw new Error(`bake ${name} ${job.state}: ${job.error?.message}`);
  const stages = (job.result as { manifest: { stages: Record<string, number> } }).manifest.stages;
  return { seconds: (performance.now() - t) / 1000, stages };
}

try {
  const last = 'bench-warm';
  if (coldRun) {
    const cold = await bake('bench-cold');
    const warm = await bake('bench-warm');
    for (const [k, v] of Object.entries(cold.stages)) console.log(`bench bake stage ${k}: cold ${v} s, warm ${warm.stages[k]} s`);
    console.log(
      `bench bake: ${warm.seconds.toFixed(1)} s warm vs ${cold.seconds.toFixed(1)} s cold ` +
        `ratio ${(warm.seconds / cold.seconds).toFixed(2)} target 0.7`,
    );
  } else if (rebake) {
    const one = await bake('bench-warm', baked);
    for (const [k, v] of Object.entries(one.stages)) console.log(`bench bake stage ${k}: re-bake ${v} s`);
    console.log(
      `bench bake: ${one.seconds.toFixed(1)} s, a re-bake of the cached control-node image (Docker present, nothing to install; ` +
        `the fresh Debian bake by stage: test/bake/bake.test.ts; cold vs warm: npx tsx test/bench/bake.ts --cold)`,
    );
  } else {
    const label = warmCache ? 'warm' : 'cold';
    const one = await bake('bench-warm');
    for (const [k, v] of Object.entries(one.stages)) console.log(`bench bake stage ${k}: ${label} ${v} s`);
    console.log(`bench bake: ${one.seconds.toFixed(1)} s with a ${label} cache (cold vs warm: npx tsx test/bench/bake.ts --cold)`);
  }
  const exp = await jobs.wait(svc.exportImage({ imageId: 'bench-warm', format: 'ova' }));
  if (exp.state !== 'succeeded') throw new Error(`export ${exp.error?.message}`);
  const ova = (exp.result as { files: { path: string; bytes: number }[] }).files[0]!;
  const map = JSON.parse(
    execFileSync('qemu-img', ['map', '--output=json', join(state, 'images', last, 'base.qcow2')], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 ** 2,
    }),
  ) as { length: number; data: boolean }[];
  const used = map.filter((e) => e.data).reduce((n, e) => n + e.length, 0);
  console.log(
    `bench bake ova-size: ${statSync(ova.path).size} bytes vs ${used} used bytes ` +
      `ratio ${(statSync(ova.path).size / used).toFixed(2)} target 1`,
  );
} finally {
  await jobs.shutdown();
  for (const v of m.vms.list()) await m.vms.delete(v.id).catch(() => {});
  await m.close({ stopVms: true });
  db.close();
  rmSync(home, { recursive: true, force: true });
}
