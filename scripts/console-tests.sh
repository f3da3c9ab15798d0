#!/usr/bin/env bash
# The web console's browser tests (tests/console/): headless Chromium from
# Debian's `chromium` package, driven by playwright-core from npm, against
# the real daemon (target/debug/agentd). Installs what it needs by itself.
# Screenshots of each page go to tests/console/artifacts/ (not committed);
# CONSOLE_DOC_SHOTS=1 also writes them to docs/console/ for docs/console.md.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# scripts/test.sh hands over the binary its tests were built with.
if [ -z "${AGENTD_BIN:-}" ]; then
  cargo build --locked -q -p agentd
  AGENTD_BIN="$PWD/target/debug/agentd"
fi

cd tests/console
echo "== npm ci (playwright-core, pinned in package-lock.json)"
npm ci --no-audit --no-fund --silent
echo "== console browser tests"
AGENTD_BIN="$AGENTD_BIN" node --test --test-concurrency=1 ./*.test.js
