/**
 * The tiny test agent: a docker-archive tar (the `docker save` layout: manifest.json, the image
 * config <sha256>.json, one layer <sha256>/layer.tar) built here without docker or a registry, from
 * the host's busybox-static. Its entrypoint is the agent's enrolment and nothing else: it reads
 * $AGENT_ENROLMENT_CODE_FILE, POSTs {"code": …} to $AGENT_CONTROL_PLANE_URL/v1/agents/$AGENT_ID/enrol
 * (docs/control-plane.md) with busybox wget every 2 s until the control plane answers 2xx, logging
 * each try to stdout, then sleeps forever. It runs as uid 10001 (the payload's assumption) and
 * needs no root: it writes only its own state volume, and only to remember that it enrolled.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readTar, tarBytes, type TarEntry } from './tar';

export const AGENT_REF = 'povdesk/test-agent:1' as const;
export const BUSYBOX = '/bin/busybox';
/** The payload's agent uid (main/services/control-node/payload.ts: "the container runs as uid 10001"). */
export const AGENT_UID = 10001;
/** The state volume's mount point (payload.ts STATE_VOLUME): seeded from the image, so owned by the agent. */
const STATE_DIR = 'var/lib/dashboard-agent';

/**
 * The entrypoint. Every external command goes through `busybox <applet>`, so the same script runs
 * on the host's busybox in a test. Values from the environment are checked before use: the id and
 * code must be the protocol's identifiers, so the JSON body needs no escaping.
 */
export const AGENT_SCRIPT =
  `#!/bin/sh
# povdesk test agent: redeem the enrolment code, then stay up.
say() { echo "test-agent: $*"; }
ID_RE='^[A-Za-z0-9][A-Za-z0-9._-]*$'
STATE=\${AGENT_STATE_DIR:-/${STATE_DIR}}
if [ -f "$STATE/enrolled" ]; then
  say "already enrolled as $(busybox cat "$STATE/enrolled"); staying up"
  while :; do busybox sleep 3600; done
fi
[ -n "\${AGENT_ID:-}" ] || { say "AGENT_ID is not set"; exit 2; }
[ -n "\${AGENT_CONTROL_PLANE_URL:-}" ] || { say "AGENT_CONTROL_PLANE_URL is not set"; exit 2; }
[ -n "\${AGENT_ENROLMENT_CODE_FILE:-}" ] || { say "AGENT_ENROLMENT_CODE_FILE is not set"; exit 2; }
echo "$AGENT_ID" | busybox grep -Eq "$ID_RE" || { say "AGENT_ID is not an identifier"; exit 2; }
URL="\${AGENT_CONTROL_PLANE_URL%/}/v1/agents/$AGENT_ID/enrol"
# Debian's busybox before 1.36.1-5 has no wget -T (it segfaults on it): timeout bounds each try.
n=0
while :; do
  n=$((n + 1))
  code=$(busybox head -n 1 "$AGENT_ENROLMENT_CODE_FILE" 2>/dev/null | busybox tr -d '\\r\\n')
  if ! echo "$code" | busybox grep -Eq "$ID_RE"; then
    say "try $n: no readable enrolment code in $AGENT_ENROLMENT_CODE_FILE; again in 2 s"
  elif out=$(busybox timeout 15 busybox wget -q -O - --header 'Content-Type: application/json' --post-data ` +
  `"{\\"code\\":\\"$code\\"}" "$URL" 2>&1); then
    say "try $n: POST $URL: enrolled ($out)"
    echo "$AGENT_ID" > "$STATE/enrolled" 2>/dev/null || say "cannot write $STATE/enrolled (a restart will try the code again)"
    break
  else
    say "try $n: POST $URL failed: $(echo "$out" | busybox tr '\\n' ' '); again in 2 s"
  fi
  busybox sleep 2
done
while :; do busybox sleep 3600; done
`;

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const CREATED = '2000-01-01T00:00:00Z';

/** The image's files: /bin/busybox, /bin/sh → busybox, /agent.sh, /tmp, the agent-owned state dir. */
export function agentLayer(busybox: Buffer = readFileSync(BUSYBOX)): Buffer {
  const entries: TarEntry[] = [
    { name: 'bin', type: 'dir', mode: 0o755 },
    { name: 'bin/busybox', type: 'file', mode: 0o755, data: busybox },
    { name: 'bin/sh', type: 'symlink', mode: 0o777, linkname: 'busybox' },
    { name: 'agent.sh', type: 'file', mode: 0o755, data: Buffer.from(AGENT_SCRIPT) },
    { name: 'tmp', type: 'dir', mode: 0o1777 },
    { name: 'var', type: 'dir', mode: 0o755 },
    { name: 'var/lib', type: 'dir', mode: 0o755 },
    { name: STATE_DIR, type: 'dir', mode: 0o700, uid: AGENT_UID, gid: AGENT_UID },
  ];
  return tarBytes(entries);
}

/** The docker-archive bytes: equal busybox, equal bytes (fixed times and owners). */
export function agentImageTar(busybox?: Buffer): Buffer {
  const layer = agentLayer(busybox);
  const diffId = sha256(layer);
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: CREATED,
      config: { User: `${AGENT_UID}:${AGENT_UID}`, Env: ['PATH=/bin'], Entrypoint: ['/bin/sh', '/agent.sh'], WorkingDir: '/' },
      rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
      history: [{ created: CREATED, created_by: 'test/lab/agent-image.ts (busybox-static + agent.sh)' }],
    }),
  );
  const configName = `${sha256(config)}.json`;
  const manifest = Buffer.from(JSON.stringify([{ Config: configName, RepoTags: [AGENT_REF], Layers: [`${diffId}/layer.tar`] }]));
  return tarBytes([
    { name: diffId, type: 'dir', mode: 0o755 },
    { name: `${diffId}/layer.tar`, type: 'file', mode: 0o644, data: layer },
    { name: configName, type: 'file', mode: 0o644, data: config },
    { name: 'manifest.json', type: 'file', mode: 0o644, data: manifest },
  ]);
}

/** Writes <dir>/povdesk-test-agent.tar (atomically; kept when its bytes are already there). */
export async function buildAgentImage(dir: string): Promise<{ path: string; ref: typeof AGENT_REF; sha256: string }> {
  if (!existsSync(BUSYBOX)) throw new Error(`${BUSYBOX} is missing: install busybox-static (scripts/system-packages.txt)`);
  mkdirSync(dir, { recursive: true });
  const bytes = agentImageTar();
  const path = join(dir, 'povdesk-test-agent.tar');
  const sum = sha256(bytes);
  if (!existsSync(path) || sha256(readFileSync(path)) !== sum) {
    writeFileSync(`${path}.tmp`, bytes);
    renameSync(`${path}.tmp`, path);
  }
  return { path, ref: AGENT_REF, sha256: sum };
}

/** The manifest, config and layer members of a docker-archive tar (for checks). */
export function dockerArchive(bytes: Buffer) {
  const members = readTar(bytes);
  const get = (name: string) => members.find((m) => m.name === name);
  const manifest = JSON.parse(get('manifest.json')?.data.toString('utf8') ?? 'null') as
    { Config: string; RepoTags: string[]; Layers: string[] }[] | null;
  return { members, manifest, get };
}
