#!/usr/bin/env bash
# Runs on the GPU machine after bench/peer_bench.py exported its models to
# /tmp/peer: the accuracy of the benchmarked configurations, vigil --backend
# cuda (default layout: NHWC convolutions for fp16/bf16, fusions) against
# vigil's CPU reference on the same random input of the model's dtype, as
# relative L2 error of the output.
#   tools/device/peer_accuracy.sh DEVBUILD "resnet50:1,64 mobilenet_v2:1,64 vit_b_16:1,8" [DTYPE]
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
dt=${3:-fp16}
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
for spec in ${2:-resnet50:1,64 mobilenet_v2:1,64 vit_b_16:1,8}; do
  m=${spec%%:*}
  for n in $(echo "${spec#*:}" | tr , ' '); do
    x=/tmp/peer/x_${dt}_$n.pb
    [ -f $x ] || python3 - "$x" "$n" "$dt" <<'PY'
import sys
import numpy as np
import ml_dtypes
from onnx import numpy_helper
path, n, dt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
types = {"fp16": np.float16, "fp32": np.float32, "bf16": ml_dtypes.bfloat16}
x = np.random.default_rng(n).standard_normal((n, 3, 224, 224)).astype(types[dt])
open(path, "wb").write(numpy_helper.from_array(x, "input_0").SerializeToString())
PY
    r=$("$b/vigil" compare /tmp/peer/${m}_$dt.onnx --backends cuda,cpu --input input_0=$x 2>&1 \
      | grep -oE "rel L2 error [0-9.e+-]+|rel L2 [0-9.e+-]+" | head -1)
    echo "$m $dt batch $n: ${r:-no result}"
  done
done
