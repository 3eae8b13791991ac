// Control node: the bootstrap payload for a 1,000-VM POV.
// - fit time: fitUserData (tiers 1 → 2 → 3 in-process) against the baseline of piping the same
//   script through `gzip -9 | base64` as child processes, both measured in this run (target ≤ 1);
// - tier-3 size against `gzip -9 | base64` of the same script: ratio target ≤ 1.05 (the decoder
//   and markers are the only overhead allowed).
import { execFileSync } from 'node:child_process';
import { AppError } from '../../shared/contract/errors';
import { compressPayload, fitUserData } from '../../main/services/control-node/fit';
import { buildBootstrap } from '../../main/services/control-node/payload';
import { needs } from '../support/system';

if (needs(['sh', 'gzip', 'base64'])) {
  console.log('bench control-node: skipped (missing system programs)');
  process.exit(0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const vms = Array.from({ length: 1000 }, (_, i) => ({
  name: `${['web', 'db', 'app', 'dc', 'jump'][i % 5]}-${String(i).padStart(4, '0')}`,
  ip: `10.${20 + (i >> 8)}.${i & 255}.${1 + ((i * 7) % 250)}`,
}));
const { script } = buildBootstrap({
  povId: 'pov-bench',
  agentId: 'agt_bench',
  controlNodeName: 'web-0000',
  vms,
  enrolmentCode: 'enr_0123456789abcdefghijklmnopqrstuv',
  agentImage: 'registry.example.com/povdesk/agent:1.4.2',
  controlPlaneUrl: 'https://cp.example.com/agents',
});

const fitRuns: number[] = [];
let outcome = '';
for (let i = 0; i < 15; i++) {
  const t = performance.now();
  try {
    const f = fitUserData(script);
    outcome = `tier ${f.tier}, ${f.chars} of 16384 characters`;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    outcome = `refused: ${err.message.slice(0, 90)}`;
  }
  fitRuns.push(performance.now() - t);
}
const cliRuns: number[] = [];
let cli = '';
for (let i = 0; i < 15; i++) {
  const t = performance.now();
  cli = execFileSync('sh', ['-c', 'gzip -9 | base64'], { input: script, encoding: 'utf8' });
  cliRuns.push(performance.now() - t);
}
const packed = compressPayload(script);
const fitMs = median(fitRuns);
const cliMs = median(cliRuns);
console.log(`bench control-node script: ${script.length} chars for ${vms.length} VMs (${outcome})`);
console.log(
  `bench control-node fit: ${fitMs.toFixed(2)} ms [ratio ${(fitMs / cliMs).toFixed(3)} target 1] (baseline gzip -9 | base64 ` +
    `processes: ${cliMs.toFixed(2)} ms)`,
);
const ratio = packed.length / cli.length;
console.log(
  `bench control-node tier3-size: ${packed.length} chars [ratio ${ratio.toFixed(4)} target 1.05] (baseline gzip -9 | ` +
    `base64: ${cli.length} chars)`,
);
if (ratio > 1.05) process.exitCode = 1;
