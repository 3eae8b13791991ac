// Attestation: verifying one real quote with its event log in-process (verifyQuote: signature,
// PCR digest, the log's replay against the quote and every event against the references; node:crypto)
// against spawning tpm2-tools on the same quote and log (tpm2_eventlog to parse and replay the log,
// tpm2_checkquote to verify the quote), both measured in this run. The quote is a real swtpm's,
// over a boot's recorded event log extended into it (test/vm-manager/attest/fixtures). Also: making
// one VM's expectations (the kernel as QEMU loads it, once per kernel and memory size; cached).
// Target: in-process at least 20x faster (issue 5; issue 35 added the event log to both sides).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newPolicy } from '../../main/vm-manager/attest/policy';
import { expectationsFor, type Expectations, type References } from '../../main/vm-manager/attest/references';
import { verifyQuote } from '../../main/vm-manager/attest/verify';
import { findOvmf } from '../../main/vm-manager/host';
import { cachedImageDir } from '../vm-manager/support';
import { extendInto, readRaw } from '../vm-manager/attest/eventlog-tools';
import { needs } from '../support/system';
import {
  SYSTEM_NEEDS,
  checkquoteArgs,
  cleanup,
  guestPath,
  runGuestQuote,
  startMetadataStub,
  startSwtpm,
  tempDir,
  type WireBody,
} from '../vm-manager/attest/harness';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (needs([...SYSTEM_NEEDS, 'tpm2_eventlog'])) {
  console.log('bench attest: skipped (missing system programs)');
  process.exit(0);
}

const fixture = (n: string) => fileURLToPath(new URL(`../vm-manager/attest/fixtures/${n}`, import.meta.url));
const logFile = fixture('ovmf-kernel-2x2048.eventlog');
const ex = JSON.parse(readFileSync(fixture('ovmf-kernel-2x2048.expectations.json'), 'utf8')) as {
  firmware: References['firmware'];
  apps: Record<string, string>;
  tags: Record<string, { sha256: string; what: string }>;
};
const expectations: Expectations = {
  firmware: ex.firmware,
  apps: new Map(Object.entries(ex.apps)),
  requiredApps: Object.keys(ex.apps),
  tags: new Map(Object.entries(ex.tags).map(([k, v]) => [Number(k), v])),
  grub: null,
};
const root = tempDir('bench-attest');
const tpm = await startSwtpm(root, 'tpm');
const policy = {
  ...newPolicy('bench', '1'),
  pcrs: { initrd: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11], ready: [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13] },
  references: { made_at: 'bench' } as unknown as References,
};
const stub = await startMetadataStub({ vmId: 'vm-a', pinnedAk: tpm.ak.fingerprint, policy, learn: false, expectations });
try {
  // One genuine quote from the guest script, over the recorded boot's log.
  await extendInto(tpm.tcti, readRaw(readFileSync(logFile)).events);
  const r = await runGuestQuote(['initrd', '127.0.0.1', String(stub.port)], {
    bin: await guestPath(root),
    tcti: tpm.tcti,
    stateDir: join(root, 'state'),
    extra: { ATTEST_PCRS: '0,1,2,3,4,5,6,7,9,11', ATTEST_EVENT_LOG: logFile },
  });
  if (r.code !== 0) throw new Error(`guest-quote.sh failed (${r.code}): ${r.stderr}`);
  const { body, verdict } = stub.received.at(-1)!;
  if (!verdict.ok || !verdict.events) throw new Error(`the genuine quote was refused: ${verdict.message}`);
  // Nonce consumption is a Map lookup; the bench re-verifies one quote, so it always passes here.
  const nonces = { consume: () => ({ ok: true }) as const };
  const req = { vmId: 'vm-a', body, nonces, policy, pinnedAk: verdict.akFingerprint, expectations };

  for (let i = 0; i < 200; i++) verifyQuote(req); // warm-up (JIT, key import paths)
  const inproc: number[] = [];
  for (let round = 0; round < 15; round++) {
    const n = 200;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) if (!verifyQuote(req).ok) throw new Error('verifyQuote rejected the genuine quote');
    inproc.push((performance.now() - t0) / n);
  }

  const args = checkquoteArgs(join(root, 'cq'), body as WireBody);
  const sentLog = join(root, 'sent.eventlog');
  writeFileSync(sentLog, Buffer.from((body as WireBody).event_log!, 'base64'));
  const spawned: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t0 = performance.now();
    execFileSync('tpm2_eventlog', [sentLog], { stdio: 'ignore' }); // parse and replay the log
    execFileSync('tpm2_checkquote', args, { stdio: 'ignore' }); // throws if it rejects
    spawned.push(performance.now() - t0);
  }

  const a = median(inproc);
  const b = median(spawned);
  console.log(
    `bench attest-verify-inprocess: ${(a * 1000).toFixed(1)} us per quote with its event log (${verdict.events.count} events; ` +
      `median of 15 rounds × 200)`,
  );
  console.log(`bench attest-eventlog-checkquote-spawn: ${b.toFixed(2)} ms per quote (tpm2_eventlog + tpm2_checkquote; median of 9 runs)`);
  console.log(`bench attest-verify-speedup: ${(b / a).toFixed(1)} x ratio ${(b / a).toFixed(1)} target 20`);

  // The per-VM expectations of the test image: the kernel as QEMU loads it at a memory size (cold), then cached.
  const imageDir = cachedImageDir();
  const refs = (JSON.parse(readFileSync(join(imageDir, 'policy.json'), 'utf8')) as { references?: References }).references;
  if (refs && findOvmf()) {
    const cold: number[] = [];
    for (const mib of [256, 768, 1280, 1792, 2304, 2816, 3328, 3840, 4352]) {
      const t0 = performance.now();
      expectationsFor(refs, imageDir, { memoryMiB: mib });
      cold.push(performance.now() - t0);
    }
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) expectationsFor(refs, imageDir, { memoryMiB: 256 });
    console.log(
      `bench attest-expectations: ${median(cold).toFixed(1)} ms for a memory size not seen yet (the kernel read, patched and ` +
        `hashed), ${(((performance.now() - t0) / 1000) * 1000).toFixed(1)} us cached`,
    );
  }
} finally {
  await stub.close();
  await tpm.stop();
  cleanup(root);
}
