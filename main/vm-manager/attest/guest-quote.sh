#!/bin/sh
# guest-quote.sh — the guest half of POV Desk's local attestation (docs/attestation.md).
#
# Usage: guest-quote.sh <initrd|ready> <metadata-host> <port>
#
# Runs under busybox sh with busybox applets and tpm2-tools only (busybox wget segfaults in the
# static guest, so HTTP goes through nc; a guest without nc, like a baked Debian template, uses
# curl). Steps:
#   1. read the AK the manager provisioned at $ATTEST_AK_HANDLE (the guest never makes one);
#   2. extend the stage's phase words into PCR 11 (once per boot) and, at the ready stage, the
#      sha256 of $ATTEST_USER_DATA_FILE into PCR 13 (once per boot);
#   3. GET /attest/nonce (64 hex chars), tpm2_quote the sha256 bank with the nonce as qualifying data;
#   4. POST /attest/quote with a JSON body (the quote and the firmware's event log); print the
#      server's answer; exit 0 only on HTTP 200.
#
# Environment:
#   TPM2TOOLS_TCTI     TPM to use (default device:/dev/tpmrm0; tests use swtpm:path=<unix socket>)
#   ATTEST_PCRS        comma list overriding the stage's PCRs (default initrd 0-7,11; ready 0-7,11,13)
#   ATTEST_AK_HANDLE   persistent handle of the AK (default 0x81010002)
#   ATTEST_HTTP_TIMEOUT  seconds one HTTP exchange may take (default 30)
#   ATTEST_STATE_DIR   per-boot scratch and phase markers (default /run/attest; must be per boot)
#   ATTEST_USER_DATA_FILE  user-data the guest applied; its sha256 is extended into PCR 13 at the
#                      ready stage (an empty file or none leaves PCR 13 zero)
#   ATTEST_EVENT_LOG   the firmware's TCG event log, sent with the quote so the verifier can replay
#                      it (default /sys/kernel/security/tpm0/binary_bios_measurements; none: not sent)
#
# Exit codes: 0 verified, 1 rejected by the verifier (HTTP 403), 2 usage, 3 TPM failure,
# 4 metadata service unreachable or answered something unexpected.

set -u

die() { code=$1; shift; echo "guest-quote: $*" >&2; exit "$code"; }

[ $# -eq 3 ] || die 2 "usage: guest-quote.sh <initrd|ready> <metadata-host> <port>"
STAGE=$1
HOST=$2
PORT=$3
case "$STAGE" in
  initrd) DEFAULT_PCRS=0,1,2,3,4,5,6,7,11 ;;
  ready) DEFAULT_PCRS=0,1,2,3,4,5,6,7,11,13 ;;
  *) die 2 "stage must be initrd or ready, got '$STAGE'" ;;
esac
case "$PORT" in
  '' | *[!0-9]*) die 2 "port must be a number, got '$PORT'" ;;
esac

PCRS=${ATTEST_PCRS:-$DEFAULT_PCRS}
case "$PCRS" in
  '' | ,* | *, | *,,* | *[!0-9,]*) die 2 "ATTEST_PCRS must be a comma list of PCR numbers, got '$PCRS'" ;;
esac
AK_HANDLE=${ATTEST_AK_HANDLE:-0x81010002}
HTTP_TIMEOUT=${ATTEST_HTTP_TIMEOUT:-30}
case "$HTTP_TIMEOUT" in
  '' | *[!0-9]*) die 2 "ATTEST_HTTP_TIMEOUT must be whole seconds, got '$HTTP_TIMEOUT'" ;;
esac
STATE=${ATTEST_STATE_DIR:-/run/attest}
EVENT_LOG=${ATTEST_EVENT_LOG:-/sys/kernel/security/tpm0/binary_bios_measurements}
: "${TPM2TOOLS_TCTI:=device:/dev/tpmrm0}"
export TPM2TOOLS_TCTI

mkdir -p "$STATE" || die 3 "cannot create state dir $STATE"
W=$STATE/work.$$
mkdir -p "$W" || die 3 "cannot create $W"
trap 'rm -rf "$W"' EXIT

# Without a resource manager (a raw swtpm socket, /dev/tpm0) transient objects and sessions stay
# loaded after each tool exits and the TPM runs out of slots; with /dev/tpmrm0 this is a no-op.
flush() {
  tpm2_flushcontext -t >/dev/null 2>&1
  tpm2_flushcontext -s >/dev/null 2>&1
  tpm2_flushcontext -l >/dev/null 2>&1
  return 0
}

run_tpm() {
  # run_tpm <what> <cmd...>: runs a tpm2 tool, dies with its stderr on failure.
  what=$1; shift
  if ! "$@" >"$W/tpm.out" 2>"$W/tpm.err"; then
    flush
    die 3 "$what failed: $(tail -n 3 "$W/tpm.err" | tr '\n' ' ')"
  fi
}

# 1. the AK: the manager made it in this TPM before the first boot and pinned its public key
#    (docs/attestation.md); the guest only uses it. Any other key would be refused anyway.
flush
tpm2_readpublic -c "$AK_HANDLE" -f tss -o "$W/ak.pub" >/dev/null 2>"$W/tpm.err" ||
  die 3 "no attestation key at $AK_HANDLE: the vm-manager provisions it in the VM's TPM before the first boot ($(tail -n 1 "$W/tpm.err"))"

# 2. phase measurements. extend <pcr> <marker> <sha256 hex> — once per boot, remembered in $STATE.
extend() {
  [ -e "$STATE/extended.$2" ] && return 0
  run_tpm "tpm2_pcrextend $1 ($2)" tpm2_pcrextend "$1:sha256=$3"
  : >"$STATE/extended.$2"
}
word_digest() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

extend 11 enter-initrd "$(word_digest enter-initrd)"
if [ "$STAGE" = ready ]; then
  extend 11 leave-initrd "$(word_digest leave-initrd)"
  extend 11 sysinit "$(word_digest sysinit)"
  extend 11 ready "$(word_digest ready)"
  if [ -n "${ATTEST_USER_DATA_FILE:-}" ]; then
    [ -r "$ATTEST_USER_DATA_FILE" ] || die 2 "ATTEST_USER_DATA_FILE $ATTEST_USER_DATA_FILE is not readable"
    # Empty user-data counts as none: PCR 13 stays zero (as the verifier expects).
    [ -s "$ATTEST_USER_DATA_FILE" ] && extend 13 user-data "$(sha256sum "$ATTEST_USER_DATA_FILE" | cut -d' ' -f1)"
  fi
fi

# 3. HTTP over nc (or curl). http <method> <path> [body-file] → status in $W/status, body in $W/body.
http() {
  if [ -n "${3:-}" ]; then
    len=$(wc -c <"$3" | tr -d ' ')
    { printf '%s %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n' \
        "$1" "$2" "$HOST" "$len"; cat "$3"; } >"$W/request"
  else
    printf '%s %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$2" "$HOST" >"$W/request"
  fi
  if command -v nc >/dev/null 2>&1; then
    # nc -w bounds only the connect; timeout bounds a metadata service that accepts and never answers.
    timeout "$HTTP_TIMEOUT" nc -w 10 "$HOST" "$PORT" <"$W/request" >"$W/response" 2>"$W/nc.err"
  else
    # A guest without nc (a Debian template): curl, with its headers, for the same parsing below.
    if [ -n "${3:-}" ]; then set -- "$1" "$2" "$3" -H 'Content-Type: application/json' -H 'Expect:' --data-binary "@$3"; fi
    http_method=$1 http_path=$2
    shift 2; [ $# -gt 0 ] && shift
    curl -sS -i --max-time "$HTTP_TIMEOUT" --connect-timeout 10 -X "$http_method" "$@" "http://$HOST:$PORT$http_path" >"$W/response" 2>"$W/nc.err"
  fi
  [ -s "$W/response" ] ||
    die 4 "no answer from the metadata service at $HOST:$PORT within ${HTTP_TIMEOUT} s: $(cat "$W/nc.err")"
  head -n 1 "$W/response" | cut -d' ' -f2 >"$W/status"
  # The body starts after the first empty line (headers end with CRLF CRLF).
  tr -d '\r' <"$W/response" | sed '1,/^$/d' >"$W/body"
}

http GET /attest/nonce
[ "$(cat "$W/status")" = 200 ] ||
  die 4 "GET /attest/nonce answered '$(head -n 1 "$W/response" | tr -d '\r')': $(head -c 300 "$W/body")"
NONCE=$(tr -d ' \r\n' <"$W/body")
case "$NONCE" in
  *[!0-9a-f]*) die 4 "the nonce is not lower-case hex: '$(printf '%s' "$NONCE" | head -c 80)'" ;;
esac
[ ${#NONCE} -eq 64 ] || die 4 "the nonce must be 64 hex chars (32 bytes), got ${#NONCE}"

flush
run_tpm "tpm2_quote" tpm2_quote -c "$AK_HANDLE" -l "sha256:$PCRS" -q "$NONCE" -g sha256 \
  -m "$W/quote.msg" -s "$W/quote.sig" -o "$W/quote.pcrs" -F values
flush

b64() { base64 -w 0 "$1"; }
{
  printf '{"stage":"%s","nonce":"%s","pcr_list":"%s",' "$STAGE" "$NONCE" "$PCRS"
  printf '"ak_pub":"%s",' "$(b64 "$W/ak.pub")"
  printf '"quote":"%s",' "$(b64 "$W/quote.msg")"
  printf '"signature":"%s",' "$(b64 "$W/quote.sig")"
  # The log after the quote: every event in it happened before the PCRs were read. securityfs
  # files report no size, so it is copied first.
  if [ -r "$EVENT_LOG" ] && cat "$EVENT_LOG" >"$W/events.bin" 2>/dev/null && [ -s "$W/events.bin" ]; then
    printf '"event_log":"%s",' "$(b64 "$W/events.bin")"
  fi
  printf '"pcrs":"%s"}' "$(b64 "$W/quote.pcrs")"
} >"$W/quote.json"

# Keep the last body for debugging (e.g. a test or an operator replaying it with tpm2_checkquote).
cp "$W/quote.json" "$STATE/last-quote.$STAGE.json" 2>/dev/null

# 4. post it.
http POST /attest/quote "$W/quote.json"
STATUS=$(cat "$W/status")
cat "$W/body"
echo
case "$STATUS" in
  200) exit 0 ;;
  403) echo "guest-quote: the verifier rejected the $STAGE quote" >&2; exit 1 ;;
  *) die 4 "POST /attest/quote answered '$(head -n 1 "$W/response" | tr -d '\r')'" ;;
esac
