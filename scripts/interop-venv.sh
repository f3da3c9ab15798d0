#!/usr/bin/env bash
# Creates or updates the Python virtualenv for the interop tests (.venv at the
# repository root, or $INTEROP_VENV) from tests/interop/requirements.txt.
# Idempotent: a stamp file holds the hash of the requirements (and of the
# Python version); when it matches, nothing is installed again.
# Needs only python3 (with the venv module) and access to PyPI.
#
#   scripts/interop-venv.sh && .venv/bin/pytest -q tests/interop
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/tests/interop/requirements.txt"
venv=${INTEROP_VENV:-$root/.venv}
python=${PYTHON:-python3}
stamp="$venv/.interop-requirements.sha256"

want=$("$python" - "$req" <<'PY'
import hashlib, sys
h = hashlib.sha256(sys.version.encode())
with open(sys.argv[1], 'rb') as f:
    h.update(f.read())
print(h.hexdigest())
PY
)

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "interop venv up to date: $venv"
  exit 0
fi

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  "$python" -m venv "$venv"          # refreshes the interpreter links, keeps packages
else
  "$python" -m venv --clear "$venv"  # missing or broken: start over
fi
rm -f "$stamp"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
"${pip[@]}" install -q --upgrade pip
"${pip[@]}" install -q -r "$req"
printf '%s\n' "$want" > "$stamp"
echo "interop venv ready: $venv"
