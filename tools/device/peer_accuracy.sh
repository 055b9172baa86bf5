#!/usr/bin/env bash
# Runs on the GPU machine after bench/peer_bench.py exported its models to
# /tmp/peer: the accuracy of the benchmarked configurations, vigil --backend
# cuda (default layout: NHWC fp16 convolutions) against vigil's CPU
# reference on the same random fp16 input, as relative L2 error.
#   tools/device/peer_accuracy.sh DEVBUILD "resnet50:1,64 mobilenet_v2:1,64 vit_b_16:1,8"
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
for spec in ${2:-resnet50:1,64 mobilenet_v2:1,64 vit_b_16:1,8}; do
  m=${spec%%:*}
  for n in $(echo "${spec#*:}" | tr , ' '); do
    x=/tmp/peer/x_$n.npy
    [ -f $x ] || python3 -c "import numpy as np; np.save('$x', np.random.default_rng($n).standard_normal(($n,3,224,224)).astype(np.float16))"
    for layout in auto nchw; do
      r=$("$b/vigil" compare /tmp/peer/${m}_fp16.onnx --backends cuda,cpu --input input_0=$x --layout $layout 2>&1 \
        | grep -oE "rel L2 error [0-9.e+-]+|rel L2 [0-9.e+-]+" | head -1)
      echo "$m batch $n layout $layout: ${r:-no result}"
    done
  done
done
