#!/bin/sh
# Runs a command with a throwaway HOME, its own D-Bus session bus and an unlocked gnome-keyring,
# so keychain tests use a real Secret Service without touching anyone's real keyring.
set -eu
for prog in dbus-run-session gnome-keyring-daemon; do
  if ! command -v "$prog" >/dev/null 2>&1; then
    echo "with-keyring: $prog is missing (apt-get install dbus gnome-keyring)" >&2
    exit 1
  fi
done
HOME="$(mktemp -d)"
# The throwaway HOME goes when the command ends, however it ends (it was left in /tmp every run).
trap 'rm -rf "$HOME"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
XDG_DATA_HOME="$HOME/.local/share"
XDG_RUNTIME_DIR="$HOME/run"
export HOME XDG_DATA_HOME XDG_RUNTIME_DIR
mkdir -p "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
dbus-run-session -- sh -c 'printf %s povdesk-ci | gnome-keyring-daemon --unlock --components=secrets >/dev/null; exec "$@"' sh "$@"
