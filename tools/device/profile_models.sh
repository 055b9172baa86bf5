#!/usr/bin/env bash
# Runs on the GPU machine: `vigil bench --profile` on the peer benchmark's
# models (exported as bench/peer_bench.py does), to see where the time goes.
#   tools/device/profile_models.sh DEVBUILD OUT [MODELS] [BATCHES] [DTYPE]
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
models=${3:-resnet50,mobilenet_v2,vit_b_16}
batches=${4:-1,64}
dtype=${5:-fp16}
mkdir -p "$out" /tmp/peer
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
python3 bench/export_models.py /tmp/peer --models "$models" --dtype "$dtype"
for m in ${models//,/ }; do
  for n in ${batches//,/ }; do
    echo "== $m $dtype batch $n"
    "$b/vigil" bench /tmp/peer/${m}_$dtype.onnx --backend cuda --no-fallback --dim N=$n --warmup 5 --iters 30 \
      | grep -E "latency|throughput"
    "$b/vigil" bench /tmp/peer/${m}_$dtype.onnx --backend cuda --no-fallback --dim N=$n --warmup 5 --iters 10 \
      --profile "$out/trace_${m}_${dtype}_b$n.json" --profile-top 12 2>&1
  done
done
