/**
 * The proof before export: the baked disk boots in the local vm-manager exactly as it would boot
 * any imported disk (OVMF + swtpm, the disk as a qcow2 overlay, QEMU user networking with the
 * metadata service at 169.254.169.254). A probe payload between both markers goes into the VM's
 * user_data; the guest's own runner must fetch and run it. The probe prints one line on the serial
 * console (the nonce proves it is this boot's) and reports ready to the metadata service. When the
 * image has reference measurements the VM requires attestation: its user-data, so the probe, is
 * released only after the guest's quote and event log verified against them, and the proof
 * records that verdict.
 */
import { randomBytes } from 'node:crypto';
import type { ProofResult } from '../../../shared/contract/bake';
import { AppError } from '../../../shared/contract/errors';
import { sleep } from '../../lib/sleep';
import type { VmManagerClient } from '../../vm-api/client';
import { BEGIN_LINE, END_LINE } from '../control-node/markers';
import { RUNNER_PATH, UNIT_NAME } from '../control-node/runner';

/** Image references as the preload check takes them (preload.ts): nothing a shell would expand. */
const IMAGE_REF = /^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/;

/**
 * The container check: `docker.service` enabled is not Docker working. dockerd without
 * apparmor_parser on an AppArmor kernel (the lab found it: "the docker-default profile could not
 * be loaded"), a storage driver the kernel lacks or a missing runc leave the unit enabled and
 * refuse every `docker run`. So the probe makes a one-layer image from the guest's own /bin/sh and
 * the libraries `ldd` names (no registry, no network), runs it with no network, and removes it.
 * Docker's own error is appended to `$e` (the probe sets it to the console, which a failed proof
 * shows). Sets `c` to ok or failed.
 */
export function containerCheck(tag: string): string {
  return `c=failed
p='povdesk-proof:${tag}'
if tar -chf - /bin/sh $(ldd /bin/sh | grep -o '/[^ ]*') 2>/dev/null | timeout 120 docker import - "$p" >/dev/null 2>>"$e" &&
  [ "$(timeout 120 docker run --rm --network none "$p" /bin/sh -c 'echo ran' 2>>"$e")" = ran ]; then
  c=ok
fi
timeout 60 docker rmi -f "$p" >/dev/null 2>&1 || true
`;
}

export function probePayload(nonce: string, images: string[] = [], docker = true): string {
  for (const ref of images) if (!IMAGE_REF.test(ref)) throw new AppError('invalid_request', `"${ref}" is not an image reference`);
  // The runner starts after povdesk-preload-images.service: the images must be in Docker by now.
  const check = images.length
    ? `i=ok
for ref in ${images.map((r) => `'${r}'`).join(' ')}; do
  docker image inspect "$ref" >/dev/null 2>&1 || i="\${i#ok}missing:$ref,"
done
`
    : 'i=none\n';
  return (
    `#!/bin/sh
${BEGIN_LINE}
# POV Desk template proof: reports what the runner found, then ready.
e=/dev/ttyS0; [ -w $e ] || e=/dev/console
d=$(systemctl is-enabled docker.service 2>/dev/null || echo missing)
u=$(systemctl is-enabled ${UNIT_NAME} 2>/dev/null || echo missing)
r=$(sha256sum ${RUNNER_PATH} | cut -d' ' -f1)
${check}${docker ? containerCheck(nonce) : 'c=skipped\n'}l="POVDESK-PROBE ${nonce} docker-enabled=$d runner-unit=$u ` +
    `runner-sha256=$r images=$i container=$c"
echo "$l" > "$e"
curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' \\
  -d '{"stage":"ready"}' http://169.254.169.254/report || true
${END_LINE}
`
  );
}

const PROBE_RE =
  /POVDESK-PROBE ([0-9a-f]{16}) docker-enabled=(\S+) runner-unit=(\S+) runner-sha256=([0-9a-f]{64}|\S*) images=(\S+) container=(\S+)/;

export interface ProofInput {
  client: VmManagerClient;
  image: string;
  diskGib: number;
  expectRunnerSha256: string;
  /** false when the bake skipped Docker: then only the runner is checked; true: enabled, and a container runs */
  expectDocker: boolean;
  /** images the bake preloaded: each must be in the guest's Docker when the runner runs the probe */
  expectImages?: string[];
  /** true: the VM requires attestation; else why the image boots without (no reference measurements) */
  attest?: true | string;
  timeoutMs?: number;
  signal?: AbortSignal;
  onVm?: (id: string) => void;
  log?: (l: string) => void;
}

/** Boots, waits for the probe, deletes the VM (always). Returns the result; `passed` false with the console tail on failure. */
export async function proofBoot(o: ProofInput): Promise<ProofResult> {
  const nonce = randomBytes(8).toString('hex');
  const started = Date.now();
  const vm = await o.client.create({
    name: `proof-${nonce.slice(0, 8)}`,
    image: o.image,
    cpus: 1,
    memory_mib: 1024,
    disk_gib: o.diskGib,
    user_data: probePayload(nonce, o.expectImages ?? [], o.expectDocker),
    require_attestation: o.attest === true,
    wait_for: 'none',
  });
  o.onVm?.(vm.id);
  o.log?.(`proof VM ${vm.id} booting ${o.image}`);
  let tail = '';
  let last: string | null = null;
  let attestation: NonNullable<ProofResult['attestation']> =
    o.attest === true
      ? { required: true, verified: null, message: 'no quote yet', events: null }
      : { required: false, verified: null, message: `not attested: ${o.attest ?? 'not asked for'}`, events: null };
  const result = (passed: boolean, message: string, m?: RegExpExecArray | null): ProofResult => ({
    passed,
    at: new Date().toISOString(),
    seconds: Math.round((Date.now() - started) / 100) / 10,
    dockerEnabled: m?.[2] ?? null,
    runnerSha256: m?.[4] ?? null,
    message,
    consoleTail: tail,
    attestation,
  });
  try {
    const deadline = started + (o.timeoutMs ?? 420_000);
    while (Date.now() < deadline) {
      await sleep(2000, o.signal).catch(() => undefined);
      if (o.signal?.aborted) throw new AppError('cancelled', 'proof boot cancelled');
      const rec = await o.client.get(vm.id).catch(() => null);
      const quote = rec?.attestation.initrd;
      if (o.attest === true && quote) {
        const events = rec?.povdesk?.attestation?.initrd?.events as { count: number; checked: number; allowed: number } | null | undefined;
        attestation = {
          required: true,
          verified: quote.verified,
          message: quote.message ?? '',
          events: events ? { count: events.count, checked: events.checked, allowed: events.allowed } : null,
        };
        // a quote the verifier refused does not verify on a retry: the image does not boot what it was made with
        if (!quote.verified)
          return result(false, `the proof boot's attestation failed, so the runner never got the probe: ${quote.message}`);
      }
      const c = await o.client.console(vm.id, 400).catch(() => null);
      if (c) {
        tail = c.console.split('\n').slice(-60).join('\n');
        const lines = c.console.split('\n');
        // the live console: the lines after the last one already logged (the tail window moves)
        const from = last === null ? 0 : lines.lastIndexOf(last) + 1;
        for (const l of lines.slice(from)) if (l.trim()) o.log?.(`console: ${l}`);
        last = lines.filter((l) => l.trim()).pop() ?? last;
        const m = PROBE_RE.exec(c.console);
        if (m && m[1] === nonce) {
          const problems: string[] = [];
          if (m[4] !== o.expectRunnerSha256)
            problems.push(`the runner's sha256 is ${m[4] || 'unknown'}, the app's is ${o.expectRunnerSha256}`);
          if (m[3] !== 'enabled') problems.push(`${UNIT_NAME} is "${m[3]}", not enabled`);
          if (o.expectImages?.length && m[5] !== 'ok')
            problems.push(
              `the preloaded images are not all in Docker when the runner runs (${m[5]}): ` +
                'see povdesk-preload-images.service on the console',
            );
          // the probe is user-data: with attestation required it ran only after the quote verified
          if (o.attest === true && attestation.verified !== true)
            problems.push(`the probe ran but the VM's attestation is not recorded as verified (${attestation.message})`);
          if (o.expectDocker && m[2] !== 'enabled')
            problems.push(`systemctl is-enabled docker says "${m[2]}": Docker would not start on a POV`);
          else if (o.expectDocker && m[6] !== 'ok')
            problems.push(
              "Docker is enabled but could not run a container (an image made from the guest's /bin/sh): see Docker's error on the console",
            );
          const secs = Math.round((Date.now() - started) / 1000);
          return problems.length
            ? result(false, `the proof boot failed: ${problems.join('; ')}`, m)
            : result(
                true,
                `the runner fetched the probe from the metadata service and ran it after ${secs} s; ` +
                  `docker.service ${m[2]}${o.expectDocker ? ' and a container ran' : ''}` +
                  `${o.expectImages?.length ? `; preloaded ${o.expectImages.join(', ')} in Docker` : ''}`,
                m,
              );
        }
      }
      if (rec && (rec.state === 'failed' || rec.state === 'stopped')) {
        return result(false, `the proof VM ${rec.state}${rec.lastError ? `: ${rec.lastError}` : ''} before the runner ran the probe`);
      }
    }
    return result(
      false,
      `the runner did not run the probe within ${Math.round((o.timeoutMs ?? 420_000) / 1000)} s: see the console tail (no ` +
        `network? runner not enabled? boot stuck?)`,
    );
  } finally {
    await o.client.delete(vm.id).catch((e: Error) => o.log?.(`proof VM ${vm.id} not deleted: ${e.message}`));
  }
}
