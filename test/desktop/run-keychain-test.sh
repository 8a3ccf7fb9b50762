#!/usr/bin/env bash
# The keychain adapter against a real Secret Service: a private D-Bus session with gnome-keyring unlocked.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec dbus-run-session -- bash -c 'echo -n "keychain-test" | gnome-keyring-daemon --unlock --components=secrets >/dev/null && npx vitest run -c test/desktop/vitest.config.ts'
