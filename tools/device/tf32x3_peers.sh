#!/usr/bin/env bash
# Runs on the GPU machine after the onnxruntime-gpu wheel's parts were added
# (tools/device/ort_wheel.sh): the float32 (TF32 off) peer table of the
# transformers with vigil's default 3xTF32 products, and bench's precision
# lines on one of them, in one call.
#   tools/device/tf32x3_peers.sh DEVBUILD OUT [MODELS]
# DEVBUILD holds the stripped vigil, libvigil_cuda.so and vigil_cuda_tests
# (its 3xTF32 tests run first). MODELS defaults to vit_b_16,bert_base.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
models=${3:-vit_b_16,bert_base}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
"$b/vigil_cuda_tests" --gtest_filter='*Tf32x3*:SplitTf32*:CudaMatMul*:CudaGemm*:CudaConvPatch*' >"$out/cuda_tests.log" 2>&1
echo "vigil_cuda_tests (3xTF32 and products) exit $?"
grep -E "rel L2 to float64|FAILED|PASSED" "$out/cuda_tests.log" | head -20
tools/device/ort_wheel.sh unpack 2>&1 | tail -1
PYTHONPATH=/tmp/ortw python3 bench/peer_bench.py "$b/vigil" /tmp/peer --models "$models" --dtypes fp32 --ort \
  --markdown "$out/peers.md" --json "$out/peers.json" 2>&1 | grep -v Warning | tee "$out/peers.log" | tail -12
python3 "$(dirname "$0")/bert_inputs.py" /tmp/peer --batches 64
"$b/vigil" bench /tmp/peer/bert_base_fp32.onnx --backend cuda --no-fallback --dim N=64 --inputs-on-device \
  --outputs-on-device -i input_ids=/tmp/peer/bert_ids_64.npy -i attention_mask=/tmp/peer/bert_mask_64.npy \
  --warmup 10 --iters 50 2>&1 | tee "$out/bench_bert64.txt" | grep -E "latency|precision"
