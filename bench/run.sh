#!/usr/bin/env bash
# agentd side by side with the official Python SDK reference peer (a2a-sdk
# 1.3.0), the official Rust SDK server (a2a-server-lf 0.5.3, in-memory task
# store; bench/rustsdk) and a floor (bench/floor: HTTP/1.1, the body parsed
# as JSON, a fixed answer), on this machine, in one run,
# alternating servers, a fresh server (and for agentd a fresh data directory)
# per run. Every load run also states the server's CPU µs per request.
#
#   bench/run.sh                      # full run (about 20 minutes)
#   BENCH_SECS=5 BENCH_REPS=1 BENCH_COUNT=5000 bench/run.sh   # quick run (about 5 minutes)
#
# Knobs (environment):
#   BENCH_SECS=20            timed seconds per load run
#   BENCH_WARMUP=2           warm-up seconds per load run
#   BENCH_REPS=2             runs per (server, concurrency); the report takes the median
#   BENCH_CONCURRENCY="1 16 64"   SendMessage concurrency levels
#   BENCH_COUNT=20000        fixed-count run for the peak-RSS figure (at c=16)
#   BENCH_GET_TASKS=1000     tasks created before the GetTask phase
#   BENCH_GET_CONCURRENCY=64 GetTask concurrency levels
#   BENCH_FANOUT_SUBSCRIBERS=32  BENCH_FANOUT_ROUNDS=50
#   BENCH_FANOUT_STREAMS=10000   the large fan-out (0: skip it): that many SubscribeToTask
#                            streams on one task, BENCH_FANOUT_STREAMS_ROUNDS=5 rounds, spread over
#                            BENCH_FANOUT_SOURCES=50 loopback source addresses (127.0.0.2…; agentd
#                            admits 256 connections per address by default), against
#                            BENCH_FANOUT_STREAMS_SERVERS="agentd agentd-base rustsdk" (those in
#                            BENCH_SERVERS; add `ref` if the machine can take it). agentd runs it with
#                            AGENTD_SERVER_MAX_STREAMS and AGENTD_SERVER_MAX_CONNECTIONS raised to fit
#                            (docs/configuration.md); every process gets the hard open-file limit.
#   BENCH_ALLOCS=1           build agentd with `--features count-allocs` as well and run
#                            BENCH_ALLOC_COUNT=5000 SendMessage and as many GetTask with it (c=16):
#                            allocations per request (for agentd-base too when BENCH_BASE is such a build)
#   BENCH_COLD_RUNS=5        cold starts per server (alternating)
#   BENCH_SYNC_NORMAL=1      also run agentd with AGENTD_STORE_SYNC=normal (send, first rep)
#   BENCH_SERVERS="agentd ref rustsdk floor"
#   BENCH_BASE=/path/to/agentd  another agentd build (say, of main) run as server
#                            `agentd-base` next to this one, for before/after in one run
#   BENCH_THREADS=2          load-generator worker threads (wrk -t2)
#   BENCH_PORT=19400         first port used (each run takes the next pair)
#   BENCH_OUT=/tmp/agentd-bench/<timestamp>   results, logs, data directories
#   BENCH_VENV=/tmp/agentd-bench-venv         Python venv for the reference peer
#   BENCH_TARGET=/tmp/bench-target            cargo target dir for the floor, the Rust SDK server
#                            and the count-allocs agentd (outside the repo)
#   BENCH_PEER=<file>        the Python SDK reference peer script (`ref`); without it `ref` is
#                            left out of the run
#   BENCH_NO_BUILD=1         skip the builds (use what is there)
#   BENCH_BIN_DIR=target/release  where agentd and agentd-bench are (with BENCH_NO_BUILD=1,
#                            say target/debug for a quick look; figures then are of debug builds)
#   BENCH_WRK=auto           cross-check SendMessage with wrk (bench/wrk-post.lua)
#                            when wrk is installed: auto | 0; concurrency BENCH_WRK_CONCURRENCY="1 64"
#   BENCH_HOSTILE=1          the hostile-client scenarios (agentd and agentd-base only):
#                            `conns` (one peer holds idle sockets; another client is served?) with
#                            BENCH_CONNS_SOCKETS=3000 BENCH_CONNS_HOLD=15 and the server's open-file
#                            limit BENCH_CONNS_NOFILE=2048; `bigbody` (one body alone, then
#                            BENCH_BIG_CONCURRENCY=32 at once beside GetTask clients: small numbers,
#                            BENCH_BIG_NUMBERS_BYTES=1200000, and long strings just under the 4 MiB
#                            limit, BENCH_BIG_STRINGS_BYTES=4190000), the server's address space
#                            capped at BENCH_BIG_VMEM_MIB=8192 (a build that expands bodies without
#                            bound fails rather than take the machine)
#   BENCH_ONLY=hostile       only the hostile-client scenarios (no floor or reference peer needed)
#
# Output: $BENCH_OUT/results.jsonl (one JSON line per run), report.md
# (tables, ratios, targets), machine.txt, logs/. Only 127.0.0.1 is used.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${BENCH_SECS:-20}
WARMUP=${BENCH_WARMUP:-2}
REPS=${BENCH_REPS:-2}
CONCS=${BENCH_CONCURRENCY:-"1 16 64"}
COUNT=${BENCH_COUNT:-20000}
GET_TASKS=${BENCH_GET_TASKS:-1000}
GET_CONCS=${BENCH_GET_CONCURRENCY:-64}
FAN_SUBS=${BENCH_FANOUT_SUBSCRIBERS:-32}
FAN_ROUNDS=${BENCH_FANOUT_ROUNDS:-50}
COLD_RUNS=${BENCH_COLD_RUNS:-5}
SYNC_NORMAL=${BENCH_SYNC_NORMAL:-1}
FAN_STREAMS=${BENCH_FANOUT_STREAMS:-10000}
FAN_STREAMS_ROUNDS=${BENCH_FANOUT_STREAMS_ROUNDS:-5}
FAN_SOURCES=${BENCH_FANOUT_SOURCES:-50}
FAN_STREAMS_SERVERS=${BENCH_FANOUT_STREAMS_SERVERS:-"agentd agentd-base rustsdk"}
ALLOCS=${BENCH_ALLOCS:-1}
ALLOC_COUNT=${BENCH_ALLOC_COUNT:-5000}
SERVERS=${BENCH_SERVERS:-"agentd ref rustsdk floor"}
BASE=${BENCH_BASE:-}
if [[ -n $BASE && " $SERVERS " != *" agentd-base "* ]]; then SERVERS="$SERVERS agentd-base"; fi
if [[ " $SERVERS " == *" ref "* && -z ${BENCH_PEER:-} ]]; then
  echo "bench: BENCH_PEER names no Python SDK reference peer script: ref is left out" >&2
  SERVERS=$(echo " $SERVERS " | sed 's/ ref / /; s/^ *//; s/ *$//')
fi
THREADS=${BENCH_THREADS:-2}
PORT=${BENCH_PORT:-19400}
OUT=${BENCH_OUT:-/tmp/agentd-bench/$(date +%Y%m%d-%H%M%S)}
VENV=${BENCH_VENV:-/tmp/agentd-bench-venv}
BARE_TARGET=${BENCH_TARGET:-/tmp/bench-target}
WRK=${BENCH_WRK:-auto}
WRK_CONCS=${BENCH_WRK_CONCURRENCY:-"1 64"}
HOSTILE=${BENCH_HOSTILE:-1}
ONLY=${BENCH_ONLY:-}
CONNS_SOCKETS=${BENCH_CONNS_SOCKETS:-3000}
CONNS_HOLD=${BENCH_CONNS_HOLD:-15}
CONNS_NOFILE=${BENCH_CONNS_NOFILE:-2048}
BIG_CONC=${BENCH_BIG_CONCURRENCY:-32}
BIG_NUMBERS_BYTES=${BENCH_BIG_NUMBERS_BYTES:-1200000}
BIG_STRINGS_BYTES=${BENCH_BIG_STRINGS_BYTES:-4190000}
BIG_VMEM_MIB=${BENCH_BIG_VMEM_MIB:-8192}
if [[ $ONLY == hostile ]]; then SERVERS="agentd${BASE:+ agentd-base}"; HOSTILE=1; fi

BIN_DIR=${BENCH_BIN_DIR:-$REPO/target/release}
AGENTD=$BIN_DIR/agentd
BENCH=$BIN_DIR/agentd-bench
BARE=$BARE_TARGET/release/floor
RUSTSDK=$BARE_TARGET/release/rustsdk-ref
AGENTD_ALLOCS=$BARE_TARGET/agentd-count-allocs
PEER=${BENCH_PEER:-}
RESULTS=$OUT/results.jsonl

mkdir -p "$OUT/logs" "$OUT/data"
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
# Every server and the generator inherit the hard open-file limit (the
# large fan-out holds BENCH_FANOUT_STREAMS sockets on each side).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---------------------------------------------------------------- builds
if [[ "${BENCH_NO_BUILD:-0}" != 1 ]]; then
  if [[ $ALLOCS == 1 && $ONLY != hostile ]]; then
    # The counting build first, copied out; then the default build (cargo
    # keeps both, so switching back costs no recompilation).
    log "building agentd --features count-allocs (release) into $AGENTD_ALLOCS"
    (cd "$REPO" && cargo build --release -p agentd --features count-allocs) >"$OUT/logs/build.log" 2>&1 \
      || { tail -30 "$OUT/logs/build.log"; exit 1; }
    mkdir -p "$BARE_TARGET" && cp "$REPO/target/release/agentd" "$AGENTD_ALLOCS"
  fi
  log "building agentd and agentd-bench (release)"
  (cd "$REPO" && cargo build --release -p agentd -p agentd-bench) >>"$OUT/logs/build.log" 2>&1 \
    || { tail -30 "$OUT/logs/build.log"; exit 1; }
fi
# A stale link order (crates/agentd/build.rs) costs idle memory, never
# correctness; it goes stale at once when the agentd crate's dependencies
# change, since that renames all of the crate's own functions. Said before
# anything is measured: none of the crate's listed functions in the binary.
ORDER=$REPO/crates/agentd/link-order.txt
if command -v nm >/dev/null && [[ -f $AGENTD && -f $ORDER ]]; then
  own=$(grep -c '^_ZN6agentd' "$ORDER" || true)
  # One awk reads the whole symbol table (a `grep -q` would stop early and,
  # under pipefail, fail the pipeline with nm's SIGPIPE).
  if [[ $own -gt 0 ]] && ! nm --defined-only "$AGENTD" \
      | awk 'NR == FNR { listed[$0]; next } $3 in listed { found = 1 } END { exit !found }' \
        <(grep '^_ZN6agentd' "$ORDER") -; then
    log "warning: $AGENTD has none of the $own agentd functions link-order.txt lists: the list is stale (idle RSS will be high); bench/link-order.sh writes it again"
  fi
fi
if [[ "${BENCH_NO_BUILD:-0}" != 1 && $ONLY != hostile ]]; then
  log "building the floor into $BARE_TARGET (outside the repo)"
  mkdir -p "$BARE_TARGET/floor-src"
  cp -r "$REPO/bench/floor/." "$BARE_TARGET/floor-src/"
  # Run from the repo so rustup picks the same toolchain as agentd.
  (cd "$REPO" && cargo build --release --manifest-path "$BARE_TARGET/floor-src/Cargo.toml" \
     --target-dir "$BARE_TARGET") >>"$OUT/logs/build.log" 2>&1 \
    || { tail -30 "$OUT/logs/build.log"; exit 1; }
  if [[ " $SERVERS " == *" rustsdk "* ]]; then
    # From crates.io into the scratch directory: the lock file and the SDK stay out of the repo.
    log "building the Rust SDK reference server into $BARE_TARGET (outside the repo)"
    mkdir -p "$BARE_TARGET/rustsdk-src"
    cp -r "$REPO/bench/rustsdk/." "$BARE_TARGET/rustsdk-src/"
    (cd "$REPO" && cargo build --release --manifest-path "$BARE_TARGET/rustsdk-src/Cargo.toml" \
       --target-dir "$BARE_TARGET") >>"$OUT/logs/build.log" 2>&1 \
      || { tail -30 "$OUT/logs/build.log"; exit 1; }
  fi
fi
if [[ " $SERVERS " == *" ref "* ]] && ! "$VENV/bin/python" -c 'import a2a, uvicorn' 2>/dev/null; then
  log "creating the reference peer venv at $VENV (pip, PyPI)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "a2a-sdk[http-server,grpc,sqlite]==1.3.0" uvicorn >"$OUT/logs/pip.log" 2>&1 \
    || { tail -30 "$OUT/logs/pip.log"; exit 1; }
fi
needed=("$AGENTD" "$BENCH" ${BASE:+"$BASE"})
if [[ $ONLY != hostile ]]; then
  # Only the servers this run starts.
  [[ " $SERVERS " == *" floor "* ]] && needed+=("$BARE")
  [[ " $SERVERS " == *" ref "* ]] && needed+=("$PEER")
  [[ " $SERVERS " == *" rustsdk "* ]] && needed+=("$RUSTSDK")
  [[ $ALLOCS == 1 ]] && needed+=("$AGENTD_ALLOCS")
fi
for f in "${needed[@]}"; do [[ -e $f ]] || { echo "missing $f" >&2; exit 1; }; done

# Latency of one 4 KiB synchronous write on the disk agentd's data goes to:
# what an fsync costs right now (other I/O on the machine raises it).
fsync_ms() {
  local f=$OUT/data/fsync-probe t0 t1
  t0=$(date +%s%N)
  dd if=/dev/zero of="$f" bs=4k count=200 oflag=dsync status=none 2>/dev/null || true
  t1=$(date +%s%N)
  rm -f "$f"
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f ms per 4 KiB O_DSYNC write (200 writes)", ns / 200 / 1e6 }'
}

{
  echo "date: $(date -Is)"
  echo "host: $(uname -srm)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "mem: $(free -m | awk '/Mem:/ {print $2 " MiB"}')"
  echo "fs of $OUT: $(df -T "$OUT" | awk 'NR==2 {print $2 " on " $1}')"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "fsync at start: $(fsync_ms)"
  echo "agentd: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null)$(cd "$REPO" && git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
  [[ -n $BASE ]] && echo "agentd-base: $BASE"
  echo "rustc: $(cd "$REPO" && rustc --version)"
  [[ " $SERVERS " != *" ref "* ]] || echo "python: $("$VENV/bin/python" --version) a2a-sdk $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))')"
  echo "settings: SECS=$SECS WARMUP=$WARMUP REPS=$REPS CONCS='$CONCS' COUNT=$COUNT GET_TASKS=$GET_TASKS FAN=$FAN_SUBS x $FAN_ROUNDS FAN_STREAMS=$FAN_STREAMS x $FAN_STREAMS_ROUNDS over $FAN_SOURCES addresses ALLOCS=$ALLOCS x $ALLOC_COUNT THREADS=$THREADS"
  echo "open files (soft limit, inherited by every process): $(ulimit -n)"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

# ---------------------------------------------------------------- servers
SRV_PID=""
SRV_URL=""
RUN=0
cleanup() { [[ -n $SRV_PID ]] && kill -TERM "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null; true; }
trap cleanup EXIT INT TERM

next_port() { RUN=$((RUN + 1)); echo $((PORT + 2 * RUN)); }   # the ref peer also takes port+1 (gRPC)

rpc_path() { case $1 in agentd*) echo /a2a/jsonrpc ;; *) echo / ;; esac; }

# server_cmd LABEL PORT DATADIR: the exec line of a server.
server_cmd() {
  case $1 in
    agentd) echo "$AGENTD serve --listen 127.0.0.1:$2 --data-dir $3 --agent tck" ;;
    agentd-normal) echo "env AGENTD_STORE_SYNC=normal $AGENTD serve --listen 127.0.0.1:$2 --data-dir $3 --agent tck" ;;
    agentd-base) echo "$BASE serve --listen 127.0.0.1:$2 --data-dir $3 --agent tck" ;;
    ref) echo "$VENV/bin/python $PEER --port $2" ;;
    rustsdk) echo "$RUSTSDK $2" ;;
    floor) echo "$BARE $2" ;;
    *) echo "unknown server $1" >&2; return 1 ;;
  esac
}

start_server() {   # LABEL
  local port; port=$(next_port)
  local dir=$OUT/data/$1-$RUN
  case $1 in
    agentd) "$AGENTD" serve --listen "127.0.0.1:$port" --data-dir "$dir" --agent tck 2>>"$OUT/logs/$1.log" & ;;
    agentd-normal) AGENTD_STORE_SYNC=normal "$AGENTD" serve --listen "127.0.0.1:$port" --data-dir "$dir" --agent tck 2>>"$OUT/logs/$1.log" & ;;
    agentd-base) "$BASE" serve --listen "127.0.0.1:$port" --data-dir "$dir" --agent tck 2>>"$OUT/logs/$1.log" & ;;
    ref) "$VENV/bin/python" "$PEER" --port "$port" >>"$OUT/logs/$1.log" 2>&1 & ;;
    rustsdk) "$RUSTSDK" "$port" >>"$OUT/logs/$1.log" 2>&1 & ;;
    floor) "$BARE" "$port" >>"$OUT/logs/$1.log" 2>&1 & ;;
  esac
  SRV_PID=$!
  SRV_URL=http://127.0.0.1:$port
  "$BENCH" wait --url "$SRV_URL" --timeout-secs 60 2>/dev/null || { echo "$1 did not start (see $OUT/logs/$1.log)" >&2; exit 1; }
}

stop_server() {
  kill -TERM "$SRV_PID" 2>/dev/null || true
  wait "$SRV_PID" 2>/dev/null || true
  SRV_PID=""
  rm -rf "$OUT/data"/*
}

bench() {   # SCENARIO LABEL ARGS...: one run against the running server, appended to results
  local scenario=$1 label=$2; shift 2
  "$BENCH" "$scenario" --url "$SRV_URL" --rpc-path "$(rpc_path "$label")" --label "$label" \
    --pid "$SRV_PID" --threads "$THREADS" "$@" 2>>"$OUT/logs/bench.log" | tee -a "$RESULTS" \
    | sed 's/^/    /' >&2
}

has() { [[ " $SERVERS " == *" $1 "* ]]; }

if [[ $ONLY != hostile ]]; then
# ---------------------------------------------------------------- cold start + idle RSS
# Every executable is read back from disk the same way first, whatever wrote
# it last: a binary just built or copied sits in the page cache in large
# folios, of which the kernel maps about 2 MiB more at start-up (idle RSS
# 20 against 18 MiB for the same bytes, copied a minute before). The first
# start then reads the disk; the median of the starts leaves it out.
for exe in "${AGENTD:-}" "${BASE:-}" "${RUSTSDK:-}" "${BARE:-}"; do
  if [[ -f $exe ]]; then dd if="$exe" iflag=nocache count=0 status=none || true; fi
done
# agentd twice: with a fresh data directory (first start: creates the
# database, switches it to WAL, runs the migrations, all fsynced) and with an
# existing one (a restart), as `agentd-existing`.
KEEP=$OUT/data-keep/agentd
if has agentd; then
  port=$(next_port)
  "$BENCH" coldstart --url "http://127.0.0.1:$port" --label prepare --runs 1 --log "$OUT/logs/agentd.log" \
    -- $(server_cmd agentd "$port" "$KEEP") >/dev/null 2>>"$OUT/logs/bench.log"
fi
for ((i = 0; i < COLD_RUNS; i++)); do
  list=$SERVERS
  if has agentd; then list="$list agentd-existing"; fi
  for s in $list; do
    port=$(next_port)
    log "cold start: $s (run $((i + 1))/$COLD_RUNS)"
    if [[ $s == agentd-existing ]]; then cmd=$(server_cmd agentd "$port" "$KEEP"); else cmd=$(server_cmd "$s" "$port" "$OUT/data/cold-$s-$RUN"); fi
    # shellcheck disable=SC2086
    "$BENCH" coldstart --url "http://127.0.0.1:$port" --label "$s" --runs 1 --log "$OUT/logs/${s%-existing}.log" \
      -- $cmd 2>>"$OUT/logs/bench.log" | tee -a "$RESULTS" | sed 's/^/    /' >&2
    rm -rf "$OUT/data"/*
  done
done

# ---------------------------------------------------------------- SendMessage throughput
for c in $CONCS; do
  for ((r = 1; r <= REPS; r++)); do
    list=$SERVERS
    if [[ $SYNC_NORMAL == 1 && $r == 1 ]] && has agentd; then list="$list agentd-normal"; fi
    for s in $list; do
      log "send c=$c: $s (run $r/$REPS)"
      start_server "$s"
      bench send "$s" -c "$c" -d "$SECS" --warmup "$WARMUP"
      stop_server
    done
  done
done

# ---------------------------------------------------------------- peak RSS after a fixed count
for s in $SERVERS; do
  log "fixed count $COUNT at c=16: $s"
  start_server "$s"
  bench send "$s" -c 16 --count "$COUNT"
  stop_server
done

# ---------------------------------------------------------------- allocations per request
# The count-allocs build of this tree (and BENCH_BASE when it is one: it
# writes `agentd-allocations:` lines on SIGUSR1; another build would die of
# the signal, so it is not sent one). agentd-bench signals the server at the
# start and the end of the run and reads the counts from its log.
start_counting() {   # LABEL BINARY LOG
  local port; port=$(next_port)
  "$2" serve --listen "127.0.0.1:$port" --data-dir "$OUT/data/$1-allocs-$RUN" --agent tck 2>>"$3" &
  SRV_PID=$!
  SRV_URL=http://127.0.0.1:$port
  "$BENCH" wait --url "$SRV_URL" --timeout-secs 60 2>/dev/null || { echo "$1 (count-allocs) did not start (see $3)" >&2; exit 1; }
}
if [[ $ALLOCS == 1 ]]; then
  for s in agentd-base agentd; do
    has "$s" || continue
    bin=$AGENTD_ALLOCS
    if [[ $s == agentd-base ]]; then
      bin=$BASE
      grep -q 'agentd-allocations: ' "$bin" || { log "allocations: $s is not a count-allocs build (n/a)"; continue; }
    fi
    for scenario in send get; do
      log "allocations: $ALLOC_COUNT $scenario at c=16: $s (count-allocs build)"
      alog=$OUT/logs/$s-allocs-$scenario.log
      start_counting "$s" "$bin" "$alog"
      extra=()
      [[ $scenario == get ]] && extra=(--tasks "$GET_TASKS")
      bench "$scenario" "$s" -c 16 --count "$ALLOC_COUNT" --alloc-log "$alog" "${extra[@]}"
      stop_server
    done
  done
fi

# ---------------------------------------------------------------- GetTask
for c in $GET_CONCS; do
  for ((r = 1; r <= REPS; r++)); do
    for s in $SERVERS; do
      [[ $s == floor ]] && continue
      log "get c=$c: $s (run $r/$REPS)"
      start_server "$s"
      bench get "$s" -c "$c" -d "$SECS" --warmup "$WARMUP" --tasks "$GET_TASKS"
      stop_server
    done
  done
done

# ---------------------------------------------------------------- wrk cross-check
# The same request with wrk (the tool behind the reference figures), which
# costs less CPU per request than the reqwest-based generator: on 2 shared
# cores that changes the floor's figure most. Bodies are not checked here.
wrk_ms() {  # "1.23ms" / "456.00us" / "1.01s" -> milliseconds
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}
if [[ $WRK != 0 ]] && command -v wrk >/dev/null; then
  for c in $WRK_CONCS; do
    for ((r = 1; r <= REPS; r++)); do
      for s in $SERVERS; do
        log "wrk c=$c: $s (run $r/$REPS)"
        start_server "$s"
        t=$((c < 2 ? 1 : 2))   # wrk needs connections >= threads
        wrk -t"$t" -c"$c" -d"${WARMUP}s" -s "$REPO/bench/wrk-post.lua" "$SRV_URL$(rpc_path "$s")" >/dev/null 2>&1 || true
        out=$(wrk -t"$t" -c"$c" -d"${SECS}s" --timeout 10s --latency -s "$REPO/bench/wrk-post.lua" "$SRV_URL$(rpc_path "$s")" 2>&1 || true)
        echo "$out" >>"$OUT/logs/wrk.log"
        rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
        [[ -n $rps ]] || { log "wrk gave no result (see $OUT/logs/wrk.log)"; echo "$out" >>"$OUT/logs/wrk.log"; stop_server; continue; }
        p50=$(wrk_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
        p99=$(wrk_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
        errs=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' <<<"$out")
        hwm=$(awk '/^VmHWM:/ {printf "%.3f", $2 / 1024}' "/proc/$SRV_PID/status")
        line=$(printf '{"scenario":"send-wrk","label":"%s","concurrency":%s,"duration_s":%s,"rps":%s,"p50_ms":%s,"p99_ms":%s,"errors":%s,"hwm_mib":%s,"loadavg_1m":%s,"ts":%s}' \
          "$s" "$c" "$SECS" "${rps:-0}" "$p50" "$p99" "$errs" "${hwm:-0}" "$(cut -d' ' -f1 /proc/loadavg)" "$(date +%s)")
        echo "$line" | tee -a "$RESULTS" | sed 's/^/    /' >&2
        stop_server
      done
    done
  done
fi

# ---------------------------------------------------------------- fan-out
for ((r = 1; r <= REPS; r++)); do
  for s in $SERVERS; do
    [[ $s == floor ]] && continue
    log "fanout S=$FAN_SUBS x $FAN_ROUNDS rounds: $s (run $r/$REPS)"
    start_server "$s"
    bench fanout "$s" -s "$FAN_SUBS" -k "$FAN_ROUNDS" || log "fanout against $s failed (see $OUT/logs/bench.log)"
    stop_server
  done
done

# ---------------------------------------------------------------- fan-out to many streams
if ((FAN_STREAMS > 0)); then
  if (($(ulimit -n) < FAN_STREAMS + 512)); then
    log "open-file limit $(ulimit -n) is below $((FAN_STREAMS + 512)): the large fan-out is skipped"
  else
    for s in $SERVERS; do
      [[ " $FAN_STREAMS_SERVERS " == *" $s "* ]] || continue
      log "fanout S=$FAN_STREAMS x $FAN_STREAMS_ROUNDS rounds over $FAN_SOURCES source addresses: $s"
      # agentd's stream and connection budgets raised for the run (the
      # per-address cap stays at its default: the streams come from many addresses).
      AGENTD_SERVER_MAX_STREAMS=$((FAN_STREAMS + 64)) AGENTD_SERVER_MAX_CONNECTIONS=$((FAN_STREAMS + 512)) \
        start_server "$s"
      bench fanout "$s" -s "$FAN_STREAMS" -k "$FAN_STREAMS_ROUNDS" --warmup-rounds 1 \
        --source-addrs "$FAN_SOURCES" --timeout-secs 60 \
        || log "fanout S=$FAN_STREAMS against $s failed (see $OUT/logs/bench.log)"
      stop_server
    done
  fi
fi

fi

# ---------------------------------------------------------------- hostile clients
# conns: the server runs with a lower open-file limit (BENCH_CONNS_NOFILE),
# so that one peer can reach it within this machine's limits.
# bigbody: the server's address space is capped (BENCH_BIG_VMEM_MIB), so a
# build that expands bodies without bound fails instead of taking the machine.
start_server_limited() {   # LABEL ULIMIT-OPTION VALUE
  local port; port=$(next_port)
  local dir=$OUT/data/$1-$RUN bin=$AGENTD
  [[ $1 == agentd-base ]] && bin=$BASE
  (ulimit "$2" "$3"; exec "$bin" serve --listen "127.0.0.1:$port" --data-dir "$dir" --agent tck 2>>"$OUT/logs/$1.log") &
  SRV_PID=$!
  SRV_URL=http://127.0.0.1:$port
  "$BENCH" wait --url "$SRV_URL" --timeout-secs 60 2>/dev/null || { echo "$1 did not start (see $OUT/logs/$1.log)" >&2; exit 1; }
}
if [[ $HOSTILE == 1 ]]; then
  for ((r = 1; r <= REPS; r++)); do
    for s in $SERVERS; do
      [[ $s == agentd || $s == agentd-base ]] || continue
      log "conns: $CONNS_SOCKETS idle sockets from one peer, nofile $CONNS_NOFILE: $s (run $r/$REPS)"
      start_server_limited "$s" -n "$CONNS_NOFILE"
      "$BENCH" conns --url "$SRV_URL" --label "$s" --pid "$SRV_PID" --sockets "$CONNS_SOCKETS" \
        --hold-secs "$CONNS_HOLD" 2>>"$OUT/logs/bench.log" | tee -a "$RESULTS" | sed 's/^/    /' >&2 \
        || log "conns against $s failed (see $OUT/logs/bench.log)"
      stop_server
      for shape in numbers strings; do
        bytes=$BIG_STRINGS_BYTES
        [[ $shape == numbers ]] && bytes=$BIG_NUMBERS_BYTES
        log "bigbody $shape $bytes bytes, 1 then $BIG_CONC at once: $s (run $r/$REPS)"
        start_server_limited "$s" -v $((BIG_VMEM_MIB * 1024))
        bench bigbody "$s" --shape "$shape" --bytes "$bytes" -c "$BIG_CONC" --timeout-secs 300 \
          || log "bigbody against $s failed (see $OUT/logs/bench.log)"
        stop_server
      done
    done
  done
fi

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo "fsync at end: $(fsync_ms)" >>"$OUT/machine.txt"
"$BENCH" report "$RESULTS" >"$OUT/report.md"
echo
cat "$OUT/machine.txt"
echo
cat "$OUT/report.md"
echo
echo "results: $RESULTS"
echo "report:  $OUT/report.md"
