#!/usr/bin/env bash
# Writes crates/agentd/link-order.txt: the functions a release daemon runs,
# start-up first, then those its requests add, for the linker to lay out
# together (see crates/agentd/build.rs). Run it again when the code a
# start-up or a request runs has changed much, or after a toolchain update;
# a stale list costs memory, never correctness.
#
#   bench/link-order.sh        # ~3 minutes after a release build; needs valgrind and curl
#
# The daemon runs under callgrind (every function that runs is recorded,
# not a sample): the first dump is taken once it has answered its agent
# card and sat idle a second (what the idle RSS measures), the second when
# it exits after a round of requests on JSON-RPC and REST, blocking and
# streaming, and the reads that follow them.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT
PID=""

command -v valgrind >/dev/null || { echo "link-order.sh: valgrind is needed" >&2; exit 1; }
if [[ -z ${AGENTD:-} ]]; then   # AGENTD=<a release build> uses that one instead
  (cd "$REPO" && cargo build --release -p agentd)
  AGENTD=$REPO/target/release/agentd
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
  --callgrind-out-file="$WORK/cg.out" \
  "$AGENTD" serve --listen "127.0.0.1:$PORT" --data-dir "$WORK/data" --agent tck 2>"$WORK/daemon.log" &
PID=$!

for _ in $(seq 600); do
  curl -sf "$URL/.well-known/agent-card.json" >/dev/null && break
  sleep 0.1
done
curl -sf "$URL/.well-known/agent-card.json" >/dev/null || { cat "$WORK/daemon.log" >&2; exit 1; }
sleep 1
callgrind_control -d "$PID" >/dev/null

H=(-sf -H 'Content-Type: application/json' -H 'A2A-Version: 1.0')
rpc() { curl "${H[@]}" "$URL/a2a/jsonrpc" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}"; }
send='{"message":{"messageId":"tck-complete-task-MID","role":"ROLE_USER","parts":[{"text":"hi"}]}}'
for i in $(seq 20); do
  task=$(rpc SendMessage "${send/MID/$i}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["task"]["id"])')
  rpc GetTask "{\"id\":\"$task\"}" >/dev/null
  curl "${H[@]}" "$URL/a2a/rest/tasks/$task" >/dev/null
  curl "${H[@]}" "$URL/a2a/rest/message:send" -d "${send/MID/rest-$i}" >/dev/null
  curl "${H[@]}" -N "$URL/a2a/jsonrpc" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"SendStreamingMessage\",\"params\":${send/MID/sse-$i}}" >/dev/null
  curl "${H[@]}" -N "$URL/a2a/rest/message:stream" -d "${send/MID/rest-sse-$i}" >/dev/null
done
rpc ListTasks '{"pageSize":10}' >/dev/null
curl "${H[@]}" "$URL/a2a/rest/tasks?pageSize=10" >/dev/null

kill -TERM "$PID"
wait "$PID" || true
PID=""

# Names in the order each dump first lists them, start-up's dump (.1) first,
# then the one written at exit.
# (callgrind marks a recursive call's frames with 'N: the same function).
awk '/^c?fn=/ { sub(/^c?fn=/, ""); sub(/\x27[0-9]+$/, ""); if (!($0 in seen)) { seen[$0] = 1; print } }' \
  "$WORK"/cg.out.1 "$WORK"/cg.out >"$WORK/order"
{
  echo "# The functions a release daemon runs, start-up first: written by bench/link-order.sh."
  cat "$WORK/order"
} >"$REPO/crates/agentd/link-order.txt"
echo "link-order.sh: $(wc -l <"$WORK/order") functions in crates/agentd/link-order.txt" >&2
