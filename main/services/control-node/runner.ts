import { createHash } from 'node:crypto';
import { BEGIN_MARKER, END_MARKER } from './markers';

/**
 * The template runner: the small script baked into a control-node template that fetches the
 * bootstrap from Skytap's metadata service and runs it. Generated from the same marker constants
 * as the payload (markers.ts). Plain 7-bit ASCII with short lines, because someone may have to
 * type it into a console that has no clipboard.
 */
export interface RunnerOptions {
  /** Tests only: the metadata base URL. Shipped: http://169.254.169.254 */
  metadataUrl?: string;
  /** Tests only: seconds between polls. Shipped: 20 */
  intervalSeconds?: number;
  /** Tests only: where the "already ran" sum is kept. Shipped: /var/lib/dashboard-bootstrap */
  stateDir?: string;
  /** Tests only: where the payload is written before it runs. Shipped: /run/dashboard-bootstrap.sh */
  runFile?: string;
}

export const RUNNER_PATH = '/usr/local/sbin/dashboard-bootstrap-runner';
export const UNIT_NAME = 'dashboard-bootstrap-runner.service';
export const MAX_LINE = 72;

export interface RunnerLine {
  n: number;
  text: string;
  /** First 4 hex digits of the line's sha256 (without its newline). */
  sum: string;
}

export interface RunnerScript {
  script: string;
  sha256: string;
  unit: string;
  lines: RunnerLine[];
  /** Commands the person at the console runs to check what they typed. */
  checks: { whole: string; perLine: string };
}

function plain(what: string, value: string): string {
  if (!/^[A-Za-z0-9:/._-]+$/.test(value)) throw new Error(`runner ${what} ${JSON.stringify(value)} must be a plain path or URL`);
  return value;
}

export function buildRunner(opts: RunnerOptions = {}): string {
  const base = plain('metadata URL', opts.metadataUrl ?? 'http://169.254.169.254');
  const every = opts.intervalSeconds ?? 20;
  if (!Number.isInteger(every) || every < 1) throw new Error('runner interval must be a whole number of seconds');
  const state = plain('state dir', opts.stateDir ?? '/var/lib/dashboard-bootstrap');
  const run = plain('run file', opts.runFile ?? '/run/dashboard-bootstrap.sh');
  return `#!/bin/sh
# ${RUNNER_PATH}
# Runs the POV Desk control-node bootstrap that Skytap hands
# this VM as user_data. Polls every ${every} s (the payload comes
# after power-on), needs both markers (a truncated read must
# not run), runs each payload once, keyed on its sha256.
set -u
BASE='${base}'
MARKDIR='${state}'
RUNFILE='${run}'
EVERY=${every}
BEGIN='${BEGIN_MARKER}'
END='${END_MARKER}'

log() { echo "dashboard-bootstrap-runner: $*" >&2; }
if [ "$(id -u)" != 0 ]; then
  log "must run as root (it writes /etc and calls docker)"
  exit 1
fi
umask 077
mkdir -p "$MARKDIR" "\${RUNFILE%/*}"

# curl, else wget (BusyBox wget may lack -T: use timeout).
get() {
  curl -fsS --max-time 10 "$1" 2>/dev/null && return 0
  command -v curl >/dev/null 2>&1 && return 1
  timeout 10 wget -q -O - "$1" 2>/dev/null
}

# Pull "user_data" out of the /skytap JSON document (no jq).
json_user_data() {
  LC_ALL=C awk '
function hx(h, k, v, d) {
  v = 0; h = tolower(h)
  for (k = 1; k <= 4; k++) {
    d = index("0123456789abcdef", substr(h, k, 1)) - 1
    if (d < 0) return 63
    v = v * 16 + d
  }
  return (v > 126 || v == 0) ? 63 : v
}
{ doc = doc $0 "\\n" }
END {
  i = index(doc, "\\"user_data\\"")
  if (i == 0) exit 1
  s = substr(doc, i + 11)
  if (!sub(/^[ \\t\\r\\n]*:[ \\t\\r\\n]*"/, "", s)) exit 1
  out = ""; j = 1; n = length(s)
  while (j <= n) {
    r = substr(s, j)
    if (match(r, /^[^"\\\\]+/)) {
      out = out substr(r, 1, RLENGTH); j += RLENGTH; continue
    }
    c = substr(s, j, 1)
    if (c == "\\"") { printf "%s", out; exit 0 }
    c = substr(s, j + 1, 1); j += 2
    if (c == "n") c = "\\n"
    else if (c == "t") c = "\\t"
    else if (c == "r") c = "\\r"
    else if (c == "b") c = "\\b"
    else if (c == "f") c = "\\f"
    else if (c == "u") {
      c = sprintf("%c", hx(substr(s, j, 4))); j += 4
    }
    out = out c
  }
  exit 1
}'
}

seen=
while :; do
  body=$(get "$BASE/skytap/vms/self/user_data") ||
    body=$(get "$BASE/skytap" | json_user_data) || body=
  case "$body" in
    *"$BEGIN"*"$END"*)
      sum=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
      last=$(cat "$MARKDIR/last" 2>/dev/null || true)
      if [ "$sum" != "$last" ]; then
        log "running payload $sum"
        printf '%s\\n' "$body" > "$RUNFILE"
        if sh "$RUNFILE"; then
          printf '%s\\n' "$sum" > "$MARKDIR/last"
          log "payload $sum done"
        else
          log "payload $sum failed; retry in $EVERY s"
        fi
        rm -f "$RUNFILE"
      fi
      ;;
    *"$BEGIN"*|*"$END"*)
      [ "$seen" = "$body" ] || log "one marker only: not running"
      seen=$body
      ;;
  esac
  sleep "$EVERY"
done
`;
}

export function buildUnit(): string {
  return `[Unit]
Description=POV Desk bootstrap runner (Skytap user_data)
Wants=network-online.target
After=network-online.target docker.service

[Service]
Type=simple
User=root
ExecStart=${RUNNER_PATH}
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`;
}

export const sha256Hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export function runnerScript(opts: RunnerOptions = {}): RunnerScript {
  const script = buildRunner(opts);
  const lines = script
    .replace(/\n$/, '')
    .split('\n')
    .map((text, i) => ({ n: i + 1, text, sum: sha256Hex(text).slice(0, 4) }));
  return {
    script,
    sha256: sha256Hex(script),
    unit: buildUnit(),
    lines,
    checks: {
      whole: `sha256sum ${RUNNER_PATH}`,
      perLine:
        `n=0; while IFS= read -r l; do n=$((n+1)); printf '%s %s\\n' $n ` +
        `"$(printf '%s' "$l" | sha256sum | cut -c1-4)"; done < ${RUNNER_PATH}`,
    },
  };
}
