#!/bin/bash
# Blocking SendMessage (`--agent tck`) at concurrency C on SQLite, then on a
# throw-away PostgreSQL 15 cluster with 1, 2 and 3 replicas (the load split
# evenly over them, one agentd-bench per replica), two alternating rounds.
#
#   bench/replicas.sh [SECS] [C]      # as root: initdb runs as `postgres`
#
# During each PostgreSQL run, the sessions of its database are sampled
# every 50 ms: how many are active and how many wait for a lock (with
# distinct tasks per request that is the event log's counter row, which
# orders the appends of events across replicas: `docs/scaling.md`).
#
# Cross-replica event latency instead (three replicas on one database;
# tasks run on r1, SubscribeToTask streams and the events feed on r1 and
# r2; `agentd-bench xreplica`):
#
#   bench/replicas.sh latency [ROUNDS] [C]   # default 3000 rounds, 4 at once
#
# BENCH_BIN_DIR: where agentd and agentd-bench are (default target/release).
# PostgreSQL's server binaries are looked for in /usr/lib/postgresql/15/bin.
set -u
MODE=throughput; if [ "${1:-}" = latency ]; then MODE=latency; shift; fi
SECS=${1:-8}; C=${2:-64}; BIN=${BENCH_BIN_DIR:-target/release}
PGB=/usr/lib/postgresql/15/bin
D=$(mktemp -d /tmp/pgbench-XXXX); chown postgres $D
runuser -u postgres -- $PGB/initdb -D $D/db -A trust -U postgres >/dev/null
PORT=55432
runuser -u postgres -- $PGB/pg_ctl -D $D/db -o "-p $PORT -k $D -c listen_addresses=127.0.0.1 -c max_connections=200" -l $D/pg.log start -w >/dev/null
trap "runuser -u postgres -- $PGB/pg_ctl -D $D/db stop -m immediate >/dev/null; rm -rf $D" EXIT
db=0
# The sampling query (psql repeats it every 50 ms until killed).
SAMPLE="SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE wait_event_type = 'Lock')
  FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() \\watch 0.05"
run() { # $1 = sqlite|N
  local pids=() urls=() n; db=$((db+1))
  if [ "$1" = sqlite ]; then n=1; else n=$1; runuser -u postgres -- $PGB/createdb -h 127.0.0.1 -p $PORT -U postgres b$db; fi
  for i in $(seq 1 $n); do
    local p=$((7600+i)) dd=$(mktemp -d $D/rb-XXXX)
    if [ "$1" = sqlite ]; then $BIN/agentd serve --listen 127.0.0.1:$p --data-dir $dd --agent tck >/dev/null 2>&1 &
    else $BIN/agentd serve --listen 127.0.0.1:$p --data-dir $dd --agent tck --store postgres://postgres@127.0.0.1:$PORT/b$db --replica-id r$i >/dev/null 2>&1 & fi
    pids+=($!); urls+=(http://127.0.0.1:$p)
    $BIN/agentd-bench wait --url http://127.0.0.1:$p >/dev/null 2>&1
  done
  local per=$((C / n)) out=() tot=0
  local bp=() sp=
  if [ "$1" != sqlite ]; then
    printf '%s\n' "$SAMPLE" | psql -h 127.0.0.1 -p $PORT -U postgres -d b$db -At -F ' ' > /tmp/rb-$$-locks 2>/dev/null & sp=$!
  fi
  for u in "${urls[@]}"; do ( $BIN/agentd-bench send --url $u -c $per -d $SECS --warmup 2 2>/dev/null | tail -1 > /tmp/rb-$$-${u##*:} ) & bp+=($!); done
  wait ${bp[@]}
  local locks=
  if [ -n "$sp" ]; then
    kill $sp 2>/dev/null; wait $sp 2>/dev/null
    locks=$(awk '/^[0-9]+ [0-9]+$/ {a+=$1; w+=$2; n++} END {if (n) printf " active-sessions=%.1f lock-waiting=%.1f", a/n, w/n}' /tmp/rb-$$-locks)
    rm -f /tmp/rb-$$-locks
  fi
  for u in "${urls[@]}"; do out+=("$(sed -E 's/.*"rps":([0-9.]+).*"p50_ms":([0-9.]+).*"p99_ms":([0-9.]+).*/\1 \2 \3/' /tmp/rb-$$-${u##*:})"); rm -f /tmp/rb-$$-${u##*:}; done
  printf '%s' "$1 replicas: "; printf '%s\n' "${out[@]}" | awk -v locks="$locks" '{s+=$1; if ($3>m) m=$3; p=p" "$2} END {printf "rps=%.0f p50s=%s max-p99=%s%s\n", s, p, m, locks}'
  kill ${pids[@]}; wait ${pids[@]} 2>/dev/null
}
latency() { # $1 = rounds, $2 = rounds in flight
  local pids=() urls=(); db=$((db+1))
  runuser -u postgres -- $PGB/createdb -h 127.0.0.1 -p $PORT -U postgres b$db
  for i in 1 2 3; do
    local p=$((7600+i)) dd=$(mktemp -d $D/rb-XXXX)
    $BIN/agentd serve --listen 127.0.0.1:$p --data-dir $dd --agent tck --store postgres://postgres@127.0.0.1:$PORT/b$db --replica-id r$i >/dev/null 2>&1 &
    pids+=($!); urls+=(http://127.0.0.1:$p)
    $BIN/agentd-bench wait --url http://127.0.0.1:$p >/dev/null 2>&1
  done
  $BIN/agentd-bench xreplica --url ${urls[0]} --second ${urls[1]} -k $1 -c $2
  kill ${pids[@]}; wait ${pids[@]} 2>/dev/null
}
if [ $MODE = latency ]; then latency ${1:-3000} ${2:-4}; exit; fi
for r in 1 2; do for k in sqlite 1 2 3; do run $k; done; done
