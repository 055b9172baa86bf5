#!/usr/bin/env bash
# The main job on the bundled example model: installs what is missing, builds,
# and runs vigil on examples/tiny_cnn.onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/src/cli/vigil inspect examples/tiny_cnn.onnx
