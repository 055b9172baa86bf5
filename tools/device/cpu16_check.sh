#!/usr/bin/env bash
# Runs on the GPU machine's host CPU (16 cores, no oneDNN installed): vigil's
# CPU backend against onnxruntime's CPU provider at 1 thread and at every
# core, for one or more vigil binaries, in one call.
#   tools/device/cpu16_check.sh PACK.tar.xz BINARY [BINARY ...]
# PACK holds the stripped binaries and Debian's libdnnl.so.2 (put on
# LD_LIBRARY_PATH here); the real-model set is exported once into
# /tmp/models_full (tools/models/export_models.py --size full).
set -u
pack=${1:?pack}
shift
mkdir -p /tmp/c /tmp/dl && tar -C /tmp/c -xJf "$pack" && cp /tmp/c/libdnnl.so.2 /tmp/dl/
export LD_LIBRARY_PATH=/tmp/dl
[ -d /tmp/models_full ] || python3 tools/models/export_models.py /tmp/models_full --size full > /dev/null 2>&1
lscpu | grep "Model name"
/tmp/c/"$1" bench /tmp/models_full/resnet50/model.onnx --iters 3 2>&1 | grep -i "backend:"
for b in "$@"; do
  echo "== $b"
  python3 bench/cpu_peer.py /tmp/c/"$b" /tmp/models_full --threads 1,0 --iters 20 2>&1 | grep "|" | grep -v "^| model\|---"
done
