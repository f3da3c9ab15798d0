#!/usr/bin/env bash
# Runs each fuzz target for a bounded time (docs/fuzzing.md). Meant for the CI
# command (scripts/test.sh) with the default budget; a nightly run
# gives each target longer:
#
#   scripts/fuzz.sh --decoders               # CI: the decoder targets, FUZZ_SECONDS (25) each
#   scripts/fuzz.sh                          # every target, FUZZ_SECONDS (25) each
#   FUZZ_SECONDS=1800 scripts/fuzz.sh        # the nightly profile
#   scripts/fuzz.sh send_message rest_route  # only these
#
# `--decoders` runs the targets that need only agentd-proto
# (jsonrpc_request, wire_types), built without the server feature: their
# instrumented build takes a couple of minutes. The router targets build
# the whole server stack instrumented in release (far longer than CI's
# budget on two cores), so they belong to the nightly profile; their seeds
# and regressions are replayed by `cargo test` in every CI run.
#
# Each target starts from its checked-in seeds and regressions
# (fuzz/seeds/<target>, fuzz/regressions/<target>) plus what earlier runs on
# this machine found (fuzz/corpus/<target>, not in git). A failing input is
# saved under fuzz/artifacts/<target>/ and the run stops with an error; turn
# it into a regression input as docs/fuzzing.md says.
#
# It installs what it needs by itself: cargo-fuzz (once per machine). It
# runs on the pinned stable toolchain: with `--sanitizer none`, every flag
# cargo-fuzz passes (libFuzzer's coverage instrumentation) is stable.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${FUZZ_SECONDS:-25}
cargo_fuzz_version=0.13.2
all_targets=(jsonrpc_request wire_types rest_route send_message)
features=()
if [ "${1:-}" = "--decoders" ]; then
  shift
  set -- jsonrpc_request wire_types "$@"
  features=(--no-default-features)
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! cargo fuzz --version 2>/dev/null | grep -q " $cargo_fuzz_version"; then
  echo "== installing cargo-fuzz $cargo_fuzz_version"
  cargo install --locked cargo-fuzz --version "$cargo_fuzz_version"
fi

# Release with debug assertions and overflow checks (cargo-fuzz's default);
# 16 codegen units build much faster for a slightly slower run. The
# project forbids `unsafe`: AddressSanitizer would find nothing Rust's own
# checks do not, and would double build and run time.
fuzz=(cargo fuzz run --sanitizer none --codegen-units 16 "${features[@]}")

for t in "${targets[@]}"; do
  echo "== fuzz: $t for ${seconds}s"
  mkdir -p "corpus/$t" "seeds/$t" "regressions/$t"
  if ! "${fuzz[@]}" "$t" "corpus/$t" "seeds/$t" "regressions/$t" -- \
      -max_total_time="$seconds" -dict=a2a.dict -timeout=30 -print_final_stats=1 \
      >"corpus/$t.log" 2>&1; then
    tail -n 60 "corpus/$t.log" >&2
    echo "fuzz target $t failed; the input is in fuzz/artifacts/$t/ (docs/fuzzing.md: Regression inputs)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^Done ' "corpus/$t.log" | tr '\n' ' '
  echo
done
