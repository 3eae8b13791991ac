#!/usr/bin/env bash
# Every test suite: types, lint and format, and the build; the system suites (Vitest's system project); the rest
# (Vitest's node and renderer projects, the system-lane2 share of the guests, the keyring suite,
# end to end in Chromium with Playwright), beside them (POVDESK_TEST_LANES=0: after them). Prints one closing line "N passed, N failed".
# The benchmarks are not tests: `npm run bench` runs them (CI runs the suite, not the figures).
set -uo pipefail
cd "$(dirname "$0")/.."
export NODE_OPTIONS="${NODE_OPTIONS:-} --max-old-space-size=4096"
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT # the reports, read by the summary at the end
failed_steps=()

# Each step's title, which Node runs it (node on PATH: what `npx` and npm's scripts start), its
# lane and when it started; lane_done marks a lane's end. The summary prints each step's minutes.
step() {
  echo; echo "=== $1"
  printf '%s\t%s\t%s\t%s\n' "$1" "$(node -p 'process.version + " (" + process.execPath + ")"' 2>&1)" "${lane:-1}" "$(date +%s)" >>"$results/nodes"
}
lane_done() { printf '%s\t%s\n' "${lane:-1}" "$(date +%s)" >>"$results/lane-ends"; }

# System packages: installed when we may (root or sudo), else reported.
if ! scripts/system-packages.sh --check 2>/dev/null; then
  scripts/system-packages.sh || { [ "${CI:-}" = true ] && { echo "CI=true and system packages are missing" >&2; exit 1; }; }
fi
# The Node Electron embeds (fetched from the npm registry when the machine's is another major) first
# on PATH for every step below, and npm ci under it when node_modules is missing or was installed
# from another lockfile or for another Node ABI (scripts/node-runtime.mjs).
step "the machine's own Node (the suites run on Electron's, below)"
runtime_env="$(node scripts/node-runtime.mjs --shell)" || exit 1
eval "$runtime_env"
echo "Node for every step: $POVDESK_NODE"

# ESLint and Prettier (`npm run lint`, `npm run format:check`) take one core for ~20 s: they run
# beside the typecheck (one core), in lane 3, and their output follows it.
lint() {
  local lane=3
  step "lint: eslint"
  npm run --silent lint || echo lint >>"$results/failed-steps"
  step "format: prettier --check"
  npm run --silent format:check || echo format >>"$results/failed-steps"
  lane_done
}
lint >"$results/lint.log" 2>&1 &
lint_pid=$!

step "typecheck"
npm run --silent typecheck || failed_steps+=(typecheck)
wait "$lint_pid"
echo
echo "=== lane 3, which ran beside the typecheck"
cat "$results/lint.log"

step "build"
npx electron-vite build >"$results/build.log" 2>&1 || { cat "$results/build.log"; echo "build failed" >&2; exit 1; }

# Two lanes (docs/decisions/tests.md, "Two lanes"): the system suites (about one core busy, one file at a
# time) run beside the rest, whose output is kept in a file and shown when lane 1 ends.
# POVDESK_TEST_LANES=0 runs the same steps one after another.
lane2() {
  local lane=2
  step "vitest: node (unit + in-process) and renderer"
  npx vitest run --project node --project renderer --reporter=default --reporter=json --outputFile.json="$results/vitest.json" || echo vitest >>"$results/failed-steps"

  # Lane 2's share of the system suites (vitest.config.ts, SYSTEM_LANE2): guests of the test image,
  # so that lane 1 does not run on alone once the rest is done.
  step "vitest: system, lane 2's share (QEMU guests of the test image)"
  npx vitest run --project system-lane2 --reporter=default --reporter=json --outputFile.json="$results/vitest-system2.json" || echo vitest-system-lane2 >>"$results/failed-steps"

  # Both need gnome-keyring on a private D-Bus (scripts/with-keyring.sh): where those are absent
  # (macOS, Windows) they are skipped with the reason; under CI=true that is a failure.
  if no_keyring="$(keyring_missing)"; then
    for s in keyring playwright; do
      step "$s: skipped ($no_keyring)"
      printf '%s\t%s\n' "$s" "$no_keyring" >>"$results/skipped-steps"
    done
    lane_done
    return
  fi
  step "vitest: keyring (real gnome-keyring on a private D-Bus)"
  scripts/with-keyring.sh node_modules/.bin/vitest run --project keyring --reporter=default --reporter=json --outputFile.json="$results/keyring.json" || echo keyring >>"$results/failed-steps"

  step "playwright: browser mode in Chromium, and the Electron smoke"
  PLAYWRIGHT_JSON_OUTPUT_NAME="$results/playwright.json" scripts/with-keyring.sh node_modules/.bin/playwright test --reporter=list,json || echo playwright >>"$results/failed-steps"
  lane_done
}
# Prints why the keyring steps cannot run here (and succeeds), or fails when they can.
keyring_missing() {
  local missing=()
  for prog in dbus-run-session gnome-keyring-daemon; do command -v "$prog" >/dev/null 2>&1 || missing+=("$prog"); done
  [ ${#missing[@]} -gt 0 ] && [ "${CI:-}" != true ] || return 1
  echo "no ${missing[*]} on this machine (gnome-keyring and D-Bus are Linux packages)"
}
system() {
  step "vitest: system (QEMU guests, image builds and bakes, the built app)"
  npx vitest run --project system --reporter=default --reporter=json --outputFile.json="$results/vitest-system.json" || failed_steps+=(vitest-system)
  lane_done
}
if [ "${POVDESK_TEST_LANES:-1}" = 1 ]; then
  lane2 >"$results/lane2.log" 2>&1 &
  lane2_pid=$!
  echo "(lane 2 runs beside the system suites: vitest node + renderer, keyring, Playwright; its output follows)"
  system
  wait "$lane2_pid"
  echo
  echo "=== lane 2, which ran beside the system suites"
  cat "$results/lane2.log"
else
  system
  lane2
fi
if [ -f "$results/failed-steps" ]; then
  while read -r s; do failed_steps+=("$s"); done <"$results/failed-steps"
fi

step "summary"
node scripts/summarize.mjs "$results" "${failed_steps[@]+"${failed_steps[@]}"}"
