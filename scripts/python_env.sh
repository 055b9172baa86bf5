#!/usr/bin/env bash
# The Python environment that builds the vigil Python package and runs its
# tests: a venv (default build/venv) with the pinned packages of
# tests/python/requirements.txt from PyPI. Prints the venv's python.
# Idempotent: a second run with unchanged requirements installs nothing.
#
#   scripts/python_env.sh [VENV_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
requirements=tests/python/requirements.txt
stamp="$venv/.vigil-requirements"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "== creating $venv" >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
fi
if ! cmp -s "$requirements" "$stamp"; then
  echo "== installing $requirements into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
echo "$(cd "$venv" && pwd)/bin/python"
