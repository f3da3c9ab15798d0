#!/usr/bin/env bash
# Runs the A2A conformance kit (a2aproject/a2a-tck, branch 1.0-dev) against a
# running A2A server whose card is at SUT_URL/.well-known/agent-card.json.
#
#   run-tck.sh TCK_GIT_DIR SUT_URL [run_tck.py options...]
#
# TCK_GIT_DIR is a git directory (bare is fine) of a2aproject/a2a-tck, e.g.
#   git clone --bare https://github.com/a2aproject/a2a-tck.git a2a-tck.git
# The kit is taken from its 1.0-dev branch (set TCK_REF to pin a commit).
# Options: --level must|should|may, --transport jsonrpc,http_json,grpc,
# and pytest arguments after `--` (e.g. `-- -k push -x`).
# Reports land in $TCK_WORK/reports/ (compatibility.json, junitreport.xml).
# Note: the 1.0-dev branch encodes A2A v1.0.0; a handful of its expectations
# (HTTP 409/415/502, gRPC UNIMPLEMENTED, REST content type) were changed by
# v1.0.1, which agentd follows. Count those separately, never "fix" them.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,16p' "$0"; exit 2; }
tck_git=$1; sut=$2; shift 2
work=${TCK_WORK:-/tmp/a2a-tck}
venv=${TCK_VENV:-/tmp/a2a-tck-venv}
if [ ! -f "$work/run_tck.py" ]; then
  mkdir -p "$work"
  git --git-dir="$tck_git" archive "${TCK_REF:-1.0-dev}" | tar -x -C "$work"
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -e "$work"
fi
cd "$work"
exec "$venv/bin/python" run_tck.py --sut-host "$sut" "$@"
