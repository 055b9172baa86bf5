#!/usr/bin/env bash
# Runs on the GPU machine: the CUDA backend's checks in one call.
#   tools/device/cuda_check.sh DEVBUILD OUT [STEPS]
# DEVBUILD holds stripped vigil, vigil_conformance, vigil_cuda_tests,
# libvigil_cuda.so and onnxdata.tar.gz (Debian's libonnx-testdata, the same
# cases CI runs on the CPU). STEPS (default "tests conformance models"):
#   tests        vigil_cuda_tests (GPU kernels vs CPU, threads, determinism)
#   conformance  ONNX node tests with --backend cuda (no fallback)
#   models       the real-model set exported from torchvision/PyTorch,
#                --backend cuda --no-fallback vs onnxruntime (float32)
#   jit          the real-model set under CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY
#   sanitizer    compute-sanitizer memcheck over the real-model set
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
steps=${3:-tests conformance models}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
has() { [[ " $steps " == *" $1 "* ]]; }
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  VIGIL_VERBOSE=1 "$b/vigil" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --no-fallback
  if has tests && [ -x "$b/vigil_cuda_tests" ]; then
    echo "== vigil_cuda_tests"
    "$b/vigil_cuda_tests" 2>&1 | tail -60
  fi
  if has conformance; then
    echo "== conformance --backend cuda"
    mkdir -p /tmp/onnxdata && tar -C /tmp/onnxdata -xzf "$b/onnxdata.tar.gz"
    for suite in node pytorch-converted pytorch-operator simple; do
      "$b/vigil_conformance" --backend cuda --root /tmp/onnxdata/data --suite $suite --verbose \
        --known tests/conformance/known_failures_cuda.txt > "$out/conformance_cuda_$suite.txt" 2>&1
      grep -E "^(FAIL|NOW)" "$out/conformance_cuda_$suite.txt" | head -40
      tail -2 "$out/conformance_cuda_$suite.txt"
    done
  fi
  if has models || has jit || has sanitizer; then
    echo "== real models (export)"
    [ -d /tmp/models_full ] || python3 tools/models/export_models.py /tmp/models_full --size full > "$out/export.txt" 2>&1
    tail -12 "$out/export.txt"
  fi
  if has models; then
    echo "== real models --backend cuda --no-fallback (float32, TF32 off) vs onnxruntime"
    python3 tools/models/check_models.py "$b/vigil" /tmp/models_full --max-rel-l2 1e-4 \
      --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback --markdown "$out/real_models_cuda.md"
  fi
  if has jit; then
    echo "== real models under CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY"
    CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY python3 tools/models/check_models.py "$b/vigil" /tmp/models_full \
      --max-rel-l2 1e-4 --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback \
      --markdown "$out/real_models_cuda_jit.md"
  fi
  if has sanitizer; then
    echo "== compute-sanitizer memcheck"
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
    for d in /tmp/models_full/*/; do
      n=$(basename "$d")
      args=$(python3 -c "import json,sys; i=json.load(open('$d/model.json')); print(' '.join('--input '+x['name']+'=$d'+x['file'] for x in i['inputs']))")
      "$cs" --tool memcheck --error-exitcode 9 "$b/vigil" run "$d/model.onnx" $args --backend cuda --no-fallback \
        > "$out/memcheck_$n.txt" 2>&1
      echo "$n: exit $? $(grep -E 'ERROR SUMMARY' "$out/memcheck_$n.txt")"
    done
  fi
} 2>&1 | tee "$out/cuda_check.log"
