// Template bake: time by stage, and the exported OVA's size against the used bytes of its disk.
// - In the bench runner (budget 300 s): one bake on the test suites' cache (test/templates/support.ts),
//   warm when the suites ran first (as in npm test), labelled cold or warm by what it found.
// - With --cold (by hand; a cold base build alone takes minutes, past the runner's budget): an empty
//   cache dir, then the same cache again; ratio warm/cold of the whole bake, target ≤ 0.7 (the base
//   build is most of a cold bake).
// - OVA bytes / the baked qcow2's allocated data bytes (qemu-img map): the stream-optimized VMDK
//   is compressed, target ≤ 1.
// Boots two VMs and runs mmdebstrap: minutes. Run alone: `npx tsx test/bench/templates.ts`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobRunner } from '../../main/services/jobs/runner';
import { openDatabase } from '../../main/services/store/db';
import { TemplateService } from '../../main/services/templates/service';
import { VmManagerClient } from '../../main/vm-api/client';
import { serve } from '../../main/vm-manager/server';
import { needs } from '../support/system';
import { CACHE } from '../templates/support';

if (needs(['mmdebstrap', 'guestfish', 'virt-customize', 'qemu-system-x86_64', 'qemu-img', 'swtpm'])) {
  console.log('bench templates: skipped (missing system programs)');
  process.exit(0);
}

const home = mkdtempSync(join(tmpdir(), 'bench-bake-'));
const coldRun = process.argv.includes('--cold');
const cache = coldRun ? join(home, 'cache') : CACHE;
const warmCache = existsSync(join(CACHE, 'debian')) && readdirSync(join(CACHE, 'debian')).length > 0;
const state = join(home, 'vm-manager');
const m = await serve({ stateDir: state, token: 'bench' });
const client = new VmManagerClient(m.url, 'bench', 900_000);
const db = openDatabase(join(home, 'db.sqlite'));
const jobs = new JobRunner(db);
const svc = new TemplateService({ home, jobs, allowedDirs: [home], cacheDir: cache, vmm: async () => ({ client, stateDir: state }) });

async function bake(name: string) {
  const t = performance.now();
  const job = await jobs.wait(svc.bake({ source: { debian: 'bookworm' }, name }));
  if (job.state !== 'succeeded') throw new Error(`bake ${name} ${job.state}: ${job.error?.message}`);
  const stages = (job.result as { manifest: { stages: Record<string, number> } }).manifest.stages;
  return { seconds: (performance.now() - t) / 1000, stages };
}

try {
  const last = 'bench-warm';
  if (coldRun) {
    const cold = await bake('bench-cold');
    const warm = await bake('bench-warm');
    for (const [k, v] of Object.entries(cold.stages)) console.log(`bench templates stage ${k}: cold ${v} s, warm ${warm.stages[k]} s`);
    console.log(`bench templates bake: ${warm.seconds.toFixed(1)} s warm vs ${cold.seconds.toFixed(1)} s cold ratio ${(warm.seconds / cold.seconds).toFixed(2)} target 0.7`);
  } else {
    const label = warmCache ? 'warm' : 'cold';
    const one = await bake('bench-warm');
    for (const [k, v] of Object.entries(one.stages)) console.log(`bench templates stage ${k}: ${label} ${v} s`);
    console.log(`bench templates bake: ${one.seconds.toFixed(1)} s with a ${label} cache (cold vs warm: npx tsx test/bench/templates.ts --cold)`);
  }
  const exp = await jobs.wait(svc.exportImage({ imageId: 'bench-warm', format: 'ova' }));
  if (exp.state !== 'succeeded') throw new Error(`export ${exp.error?.message}`);
  const ova = (exp.result as { files: { path: string; bytes: number }[] }).files[0]!;
  const map = JSON.parse(execFileSync('qemu-img', ['map', '--output=json', join(state, 'images', last, 'base.qcow2')], { encoding: 'utf8', maxBuffer: 64 * 1024 ** 2 })) as { length: number; data: boolean }[];
  const used = map.filter((e) => e.data).reduce((n, e) => n + e.length, 0);
  console.log(`bench templates ova-size: ${statSync(ova.path).size} bytes vs ${used} used bytes ratio ${(statSync(ova.path).size / used).toFixed(2)} target 1`);
} finally {
  await jobs.shutdown();
  for (const v of m.vms.list()) await m.vms.delete(v.id).catch(() => {});
  await m.close({ stopVms: true });
  db.close();
  rmSync(home, { recursive: true, force: true });
}
