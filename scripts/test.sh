#!/usr/bin/env bash
# The project's one test command (README quick start; CI runs exactly this):
# formatting, lints, unused dependencies, every Rust test (unit, store conformance, end-to-end
# against the real daemon), a bounded run of the decoder fuzz targets, the
# interop tests that drive the daemon with the official A2A Python SDK, and
# the web console's browser tests. It installs what it needs by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== unused dependencies (cargo machete)"
if ! cargo machete --version 2>/dev/null | grep -q "0.9.2"; then
  cargo install --locked cargo-machete --version 0.9.2
fi
cargo machete
echo "== cargo test"
cargo build --locked -p agentd
echo "== extension schemas: published copies == agentd --extension-schema"
for published in docs/ext/*/schema.json; do
  name=$(basename "$(dirname "$published")")
  if ! diff -u "$published" <(target/debug/agentd --extension-schema "$name"); then
    echo "$published differs from the daemon's schema; regenerate it with:" >&2
    echo "  cargo run -q -p agentd -- --extension-schema $name > $published" >&2
    exit 1
  fi
done
cargo test --workspace --locked
echo "== fuzz: the decoder targets for a bounded time (docs/fuzzing.md)"
scripts/fuzz.sh --decoders
echo "== interop (official A2A Python SDK)"
scripts/interop-venv.sh
AGENTD_BIN="$PWD/target/debug/agentd" .venv/bin/python -m pytest -q tests/interop
echo "== web console (headless Chromium)"
scripts/console-tests.sh
