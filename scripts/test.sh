#!/usr/bin/env bash
# The project's one test command (README quick start; CI runs exactly this):
# formatting, lints, unused dependencies, every Rust test (unit, store conformance, end-to-end
# against the real daemon), a bounded run of the decoder fuzz targets, the
# interop tests that drive the daemon with the official A2A Python SDK,
# the web console's browser tests, and the `jemalloc` build. It installs what
# it needs by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's header says how long the run has taken so far.
started=$SECONDS
step() { echo "== $1 ($((SECONDS - started)) s)"; }

# The interop virtualenv (the A2A and MCP Python SDKs) and the npm MCP
# server the MCP tests start are downloads and disk, not CPU: they are
# prepared while the compiler runs, and waited for before the tests.
venv_log=$(mktemp)
scripts/interop-venv.sh >"$venv_log" 2>&1 &
venv_pid=$!
if ! command -v npm >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nodejs npm >/dev/null
fi
# The PostgreSQL store's tests start a throw-away cluster from Debian's
# server binaries; where they are installed (or installable) the tests must
# not skip, so a broken server start fails the run instead of hiding.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && command -v apt-get >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql >/dev/null
fi
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  export AGENTD_REQUIRE_POSTGRES=1
fi
mcp_npm_log=$(mktemp)
npm ci --prefix tests/mcp --no-audit --no-fund --silent >"$mcp_npm_log" 2>&1 &
mcp_npm_pid=$!

# Clippy lints the workspace during the one build the tests need, instead of
# a `cargo clippy` pass of its own: clippy-driver compiles like rustc and
# lints the workspace's crates (cargo applies RUSTC_WORKSPACE_WRAPPER to
# workspace members only), so dependencies are compiled once, not once for
# checking and once for testing. CLIPPY_ARGS is how cargo-clippy hands its
# `-- -D warnings` to the driver. Lints run on every target `cargo test`
# builds: libraries and binaries, their unit tests and integration tests
# (the workspace has no benches or examples).
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

step "cargo fmt --check"
cargo fmt --all -- --check
step "unused dependencies (cargo machete)"
if ! cargo machete --version 2>/dev/null | grep -q "0.9.2"; then
  cargo install --locked cargo-machete --version 0.9.2
fi
cargo machete
step "cargo build of every test and the binary + clippy -D warnings"
# One feature resolution for everything: the binary the later steps use is
# the one the integration tests were built with.
cargo test --workspace --locked --no-run
step "extension schemas: published copies == agentd --extension-schema"
for published in docs/ext/*/schema.json; do
  name=$(basename "$(dirname "$published")")
  if ! diff -u "$published" <(target/debug/agentd --extension-schema "$name"); then
    echo "$published differs from the daemon's schema; regenerate it with:" >&2
    echo "  cargo run -q -p agentd -- --extension-schema $name > $published" >&2
    exit 1
  fi
done
step "cargo test"
# The MCP client's tests start real MCP servers: the official MCP Python
# SDK's from the interop virtualenv, the reference server from tests/mcp.
if ! wait "$venv_pid"; then
  cat "$venv_log" >&2
  exit 1
fi
if ! wait "$mcp_npm_pid"; then
  cat "$mcp_npm_log" >&2
  exit 1
fi
AGENTD_MCP_PYTHON="$PWD/.venv/bin/python" cargo test --workspace --locked
step "without the gRPC feature: agentd-server's unit tests"
# The binary serves gRPC by default; a build without it must still compile
# (lint-clean) and serve the other bindings.
cargo test -p agentd-server --no-default-features --lib --locked
step "fuzz: the decoder targets for a bounded time (docs/fuzzing.md)"
# The fuzz targets are a workspace of their own, built by cargo-fuzz.
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS scripts/fuzz.sh --decoders
step "interop (official A2A Python SDK)"
cat "$venv_log"
AGENTD_BIN="$PWD/target/debug/agentd" .venv/bin/python -m pytest -q tests/interop
step "web console (headless Chromium)"
AGENTD_BIN="$PWD/target/debug/agentd" scripts/console-tests.sh
step "the jemalloc build: it builds lint-clean and runs with jemalloc"
# Last: it rebuilds target/debug/agentd, which the steps above use as built
# with the default features. jemalloc's statistics, printed at exit, show it
# is the allocator the process ran with; the version line names it.
cargo build --locked -q -p agentd --features jemalloc
ran=$(_RJEM_MALLOC_CONF=stats_print:true target/debug/agentd --version 2>&1)
grep -qx "agentd [0-9.]* (allocator: jemalloc)" <<<"$ran"
grep -q "Begin jemalloc statistics" <<<"$ran"
# jemalloc's C code links against the binary's own math functions too:
# glibc's libm stays out of this build as well (cli.rs checks the default one).
loaded=$(LD_TRACE_LOADED_OBJECTS=1 target/debug/agentd)
grep -q "libc.so" <<<"$loaded"
if grep -q "libm.so" <<<"$loaded"; then echo "the jemalloc build loads libm:"; echo "$loaded"; exit 1; fi
step "done"
