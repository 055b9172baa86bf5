#!/usr/bin/env bash
# Runs on the GPU machine: the host-side cost per run of two CUDA modules on
# the small models of tests/models/tiny, with CUDA graphs off (every node
# goes through CudaBackend::Run) and the process pinned to one core, the
# modules alternating three rounds (`vigil bench` p50 of 4000 runs).
#   tools/device/host_overhead_ab.sh VIGIL OLD_MODULE NEW_MODULE [MODELS]
set -u
vigil=${1:?vigil}
old=${2:?old libvigil_cuda.so}
new=${3:?new libvigil_cuda.so}
models=${4:-"vit_b_16 text_encoder"}
for m in $models; do
  for i in 1 2 3; do
    for which in old new; do
      mod=$new
      [ "$which" = old ] && mod=$old
      r=$(VIGIL_CUDA_MODULE=$mod taskset -c 3 "$vigil" bench "tests/models/tiny/$m/model.onnx" --backend cuda \
        --cuda-graphs off --warmup 200 --iters 4000 --json 2>/dev/null |
        python3 -c "import json,sys; print(f\"{json.load(sys.stdin)['p50_ms']:.4f}\")" 2>/dev/null || echo error)
      echo "$m $which round $i: p50 $r ms"
    done
  done
done
