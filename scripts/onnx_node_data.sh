#!/usr/bin/env bash
# The node tests of a recent ONNX release, for tests/conformance: the onnx
# wheel pinned in tests/conformance/onnx_node/requirements.txt carries its
# test cases (onnx/backend/test/case/node) but, since 1.23, not their data,
# so a venv at BUILD_DIR/onnx-node/venv holds that onnx and
# tests/conformance/onnx_node/generate_node_data.py writes the data to
# BUILD_DIR/onnx-node/data/node (about 1,900 tests, 56 MB, 15 s). Prints that
# data folder. Idempotent: a second run with unchanged pins and generator
# does nothing.
#
#   scripts/onnx_node_data.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dir=$build/onnx-node
requirements=tests/conformance/onnx_node/requirements.txt
generator=tests/conformance/onnx_node/generate_node_data.py
stamp=$dir/data/.vigil-stamp

if ! cat "$requirements" "$generator" | cmp -s - "$stamp"; then
  if [[ ! -x "$dir/venv/bin/python" ]]; then
    echo "== creating $dir/venv" >&2
    mkdir -p "$dir"
    python3 -m venv "$dir/venv" >&2
  fi
  echo "== installing $requirements into $dir/venv" >&2
  "$dir/venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
  echo "== generating the ONNX node tests into $dir/data" >&2
  rm -rf "$dir/data"
  mkdir -p "$dir/data"
  "$dir/venv/bin/python" -W ignore "$generator" "$dir/data" >&2
  cat "$requirements" "$generator" >"$stamp"
fi
echo "$(cd "$dir/data" && pwd)"
