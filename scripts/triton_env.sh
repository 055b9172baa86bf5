#!/usr/bin/env bash
# Triton Inference Server for the tests of the vigil backend (tests/triton):
# the PyPI wheel nvidia-pytriton==0.7.0 carries a complete tritonserver 2.51
# (pytriton/tritonserver/bin/tritonserver, its libraries in
# nvidia_pytriton.libs/). It is downloaded with pip (nothing is installed)
# and unzipped into BUILD_DIR/triton/pytriton, where ctest looks for it.
# Prints that folder. Idempotent: a second run downloads nothing.
#
#   scripts/triton_env.sh [BUILD_DIR] [PYTHON]     (PYTHON: one with pip; default python3)
#
# VIGIL_PYTRITON_WHEEL=FILE unzips that wheel instead of downloading one (a
# machine without network, tools/device/triton_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=${2:-python3}
version=0.7.0
dest=$build/triton/pytriton
stamp=$dest/.vigil-nvidia-pytriton-$version

if [[ ! -f "$stamp" ]]; then
  if [[ -n "${VIGIL_PYTRITON_WHEEL:-}" ]]; then
    wheel=$VIGIL_PYTRITON_WHEEL
  else
    echo "== downloading nvidia-pytriton==$version (tritonserver 2.51) into $dest" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$tmp" \
      "nvidia-pytriton==$version" >&2
    wheel=$(ls "$tmp"/nvidia_pytriton-"$version"-*.whl)
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  # A wheel is a zip; unzip it keeping the files' modes (the server and its
  # helpers must stay executable), which `python -m zipfile -e` drops.
  "$python" - "$wheel" "$dest" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        path = z.extract(info, dest)
        if (info.external_attr >> 16) & 0o111:
            os.chmod(path, 0o755)
PY
  server=$dest/pytriton/tritonserver/bin/tritonserver
  [[ -x "$server" ]] || { echo "error: $server is missing or not executable after unzipping $wheel" >&2; exit 1; }
  touch "$stamp"
fi
echo "$(cd "$dest" && pwd)"
