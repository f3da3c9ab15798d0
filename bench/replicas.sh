#!/bin/bash
# Blocking SendMessage (`--agent tck`) at concurrency C on SQLite, then on a
# throw-away PostgreSQL 15 cluster with 1, 2 and 3 replicas (the load split
# evenly over them, one agentd-bench per replica), two alternating rounds.
#
#   bench/replicas.sh [SECS] [C]      # as root: initdb runs as `postgres`
#
# BENCH_BIN_DIR: where agentd and agentd-bench are (default target/release).
# PostgreSQL's server binaries are looked for in /usr/lib/postgresql/15/bin.
set -u
SECS=${1:-8}; C=${2:-64}; BIN=${BENCH_BIN_DIR:-target/release}
PGB=/usr/lib/postgresql/15/bin
D=$(mktemp -d /tmp/pgbench-XXXX); chown postgres $D
runuser -u postgres -- $PGB/initdb -D $D/db -A trust -U postgres >/dev/null
PORT=55432
runuser -u postgres -- $PGB/pg_ctl -D $D/db -o "-p $PORT -k $D -c listen_addresses=127.0.0.1 -c max_connections=200" -l $D/pg.log start -w >/dev/null
trap "runuser -u postgres -- $PGB/pg_ctl -D $D/db stop -m immediate >/dev/null; rm -rf $D" EXIT
db=0
run() { # $1 = sqlite|N
  local pids=() urls=() n; db=$((db+1))
  if [ "$1" = sqlite ]; then n=1; else n=$1; runuser -u postgres -- $PGB/createdb -h 127.0.0.1 -p $PORT -U postgres b$db; fi
  for i in $(seq 1 $n); do
    local p=$((7600+i)) dd=$(mktemp -d /tmp/rb-XXXX)
    if [ "$1" = sqlite ]; then $BIN/agentd serve --listen 127.0.0.1:$p --data-dir $dd --agent tck >/dev/null 2>&1 &
    else $BIN/agentd serve --listen 127.0.0.1:$p --data-dir $dd --agent tck --store postgres://postgres@127.0.0.1:$PORT/b$db --replica-id r$i >/dev/null 2>&1 & fi
    pids+=($!); urls+=(http://127.0.0.1:$p)
    $BIN/agentd-bench wait --url http://127.0.0.1:$p >/dev/null 2>&1
  done
  local per=$((C / n)) out=() tot=0
  local bp=()
  for u in "${urls[@]}"; do ( $BIN/agentd-bench send --url $u -c $per -d $SECS --warmup 2 2>/dev/null | tail -1 > /tmp/rb-$$-${u##*:} ) & bp+=($!); done
  wait ${bp[@]}
  for u in "${urls[@]}"; do out+=("$(sed -E 's/.*"rps":([0-9.]+).*"p50_ms":([0-9.]+).*"p99_ms":([0-9.]+).*/\1 \2 \3/' /tmp/rb-$$-${u##*:})"); rm -f /tmp/rb-$$-${u##*:}; done
  printf '%s' "$1 replicas: "; printf '%s\n' "${out[@]}" | awk '{s+=$1; if ($3>m) m=$3; p=p" "$2} END {printf "rps=%.0f p50s=%s max-p99=%s\n", s, p, m}'
  kill ${pids[@]}; wait ${pids[@]} 2>/dev/null
}
for r in 1 2; do for k in sqlite 1 2 3; do run $k; done; done
