#!/usr/bin/env bash
# Writes crates/agentd/link-order.txt: the functions a release daemon runs,
# start-up first, then those its requests add, for the linker to lay out
# together (see crates/agentd/build.rs). Run it again when the code a
# start-up or a request runs has changed much, or after a toolchain update;
# a stale list costs memory, never correctness.
#
#   bench/link-order.sh        # two release builds (~15 minutes on 2 cores), then ~1 minute;
#                              # needs valgrind and curl
#
# Both builds a user makes are profiled, the default one and `--features
# jemalloc` (a feature changes the names of the agentd crate's own
# functions, so each build has its own; a name a build does not have is
# skipped by its linker). `AGENTD=<default build> AGENTD_JEMALLOC=<jemalloc
# build>` profiles those instead of building. Each daemon runs under
# callgrind (every function that runs is recorded, not a sample): the first
# dump is taken once it has answered its agent card and sat idle a second
# (what the idle RSS measures), the second when it exits after a round of
# requests on JSON-RPC and REST, blocking and streaming, streams following
# a task until it ends (SubscribeToTask), and the reads that follow them.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
PID=""
trap 'kill "$PID" 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT

command -v valgrind >/dev/null || { echo "link-order.sh: valgrind is needed" >&2; exit 1; }
if [[ -z ${AGENTD:-} || -z ${AGENTD_JEMALLOC:-} ]]; then
  # The jemalloc build first: the default one is what target/release holds after.
  (cd "$REPO" && cargo build --release -p agentd --features jemalloc)
  cp "$REPO/target/release/agentd" "$WORK/agentd-jemalloc"
  (cd "$REPO" && cargo build --release -p agentd)
  AGENTD=$REPO/target/release/agentd
  AGENTD_JEMALLOC=$WORK/agentd-jemalloc
fi

# profile BINARY DIR: DIR/cg.out.1 (start-up) and DIR/cg.out (requests, exit).
profile() {
  local dir=$2 port url
  mkdir -p "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url=http://127.0.0.1:$port
  valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$dir/cg.out" \
    "$1" serve --listen "127.0.0.1:$port" --data-dir "$dir/data" --agent tck 2>"$dir/daemon.log" &
  PID=$!
  for _ in $(seq 600); do
    curl -sf "$url/.well-known/agent-card.json" >/dev/null && break
    sleep 0.1
  done
  curl -sf "$url/.well-known/agent-card.json" >/dev/null || { cat "$dir/daemon.log" >&2; exit 1; }
  sleep 1
  callgrind_control -d "$PID" >/dev/null

  local h=(-sf -H 'Content-Type: application/json' -H 'A2A-Version: 1.0')
  local send='{"message":{"messageId":"tck-complete-task-MID","role":"ROLE_USER","parts":[{"text":"hi"}]}}'
  local i task
  rpc() { curl "${h[@]}" "$url/a2a/jsonrpc" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}"; }
  for i in $(seq 20); do
    task=$(rpc SendMessage "${send/MID/$i}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["task"]["id"])')
    rpc GetTask "{\"id\":\"$task\"}" >/dev/null
    curl "${h[@]}" "$url/a2a/rest/tasks/$task" >/dev/null
    curl "${h[@]}" "$url/a2a/rest/message:send" -d "${send/MID/rest-$i}" >/dev/null
    curl "${h[@]}" -N "$url/a2a/jsonrpc" \
      -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"SendStreamingMessage\",\"params\":${send/MID/sse-$i}}" >/dev/null
    curl "${h[@]}" -N "$url/a2a/rest/message:stream" -d "${send/MID/rest-sse-$i}" >/dev/null
    # Streams that follow a waiting task until a continuation ends it
    # (SubscribeToTask on both bindings: the fan-out's path).
    task=$(rpc SendMessage "${send/tck-complete-task-MID/tck-input-required-sub-$i}" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["task"]["id"])')
    curl "${h[@]}" -N "$url/a2a/jsonrpc" \
      -d "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"SubscribeToTask\",\"params\":{\"id\":\"$task\"}}" >"$dir/sub-rpc" &
    local sub_rpc=$!
    curl "${h[@]}" -N "$url/a2a/rest/tasks/$task:subscribe" >"$dir/sub-rest" &
    local sub_rest=$!
    # Each has its first event (the task) before the continuation is sent.
    for _ in $(seq 200); do
      [[ -s $dir/sub-rpc && -s $dir/sub-rest ]] && break
      sleep 0.05
    done
    rpc SendMessage "{\"message\":{\"taskId\":\"$task\",\"messageId\":\"tck-complete-task-sub-$i\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"go\"}]}}" >/dev/null
    wait "$sub_rpc" "$sub_rest" || true
  done
  rpc ListTasks '{"pageSize":10}' >/dev/null
  curl "${h[@]}" "$url/a2a/rest/tasks?pageSize=10" >/dev/null

  kill -TERM "$PID"
  wait "$PID" || true
  PID=""
}

profile "$AGENTD" "$WORK/default"
profile "$AGENTD_JEMALLOC" "$WORK/jemalloc"

# Names in the order the dumps first list them: both builds' start-ups
# (.1), then what their requests and exits add. (callgrind marks a
# recursive call's frames with 'N: the same function.)
awk '/^c?fn=/ { sub(/^c?fn=/, ""); sub(/\x27[0-9]+$/, ""); if (!($0 in seen)) { seen[$0] = 1; print } }' \
  "$WORK"/default/cg.out.1 "$WORK"/jemalloc/cg.out.1 "$WORK"/default/cg.out "$WORK"/jemalloc/cg.out >"$WORK/order"
# Start-up code callgrind does not name: the C runtime's entry and
# constructors (it enters below them), and SHA-256 with the SHA
# extensions, which valgrind's CPU lacks (sha2 picks it at run time on a
# CPU that has them; under valgrind its portable code runs instead).
{
  printf '%s\n' _start deregister_tm_clones register_tm_clones __do_global_dtors_aux frame_dummy
  nm --defined-only "$AGENTD" "$AGENTD_JEMALLOC" | awk '$2 ~ /^[tT]$/ && $3 ~ /sha256.*(x86_sha|shani|digest_blocks)/ { print $3 }'
} >"$WORK/unseen"
{
  echo "# The functions a release daemon runs, start-up first: written by bench/link-order.sh."
  awk '!seen[$0]++' "$WORK/unseen" "$WORK/order"
} >"$REPO/crates/agentd/link-order.txt"
echo "link-order.sh: $(wc -l <"$WORK/order") functions in crates/agentd/link-order.txt" >&2
