#!/usr/bin/env bash
# The main job on the bundled example model: installs what is missing, builds,
# describes examples/tiny_cnn.onnx, validates the example input against it and
# runs it on the CPU backend, writing the output to build/example-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh vigil
build/src/cli/vigil inspect examples/tiny_cnn.onnx
build/src/cli/vigil run examples/tiny_cnn.onnx --input image=examples/tiny_cnn_input.npy \
  --output-dir build/example-out
