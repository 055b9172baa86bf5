#!/usr/bin/env bash
# Runs on the GPU machine: float32 attention on TF32 tensor cores
# (attention_tf32.cu), in one call on one GPU:
#   tools/device/attention_tf32_check.sh DEVBUILD OUT "CASES" [TESTS]
# DEVBUILD holds the stripped vigil, libvigil_cuda.so and vigil_cuda_tests.
# 1. vigil_cuda_tests with the gtest filter TESTS (default: the attention,
#    fusion and 3xTF32 tests);
# 2. tools/device/ab_probe.sh with VIGIL_FUSE_ATTENTION=0 as "before" (the
#    unfused chain) on CASES (MODEL:fp32:BATCH[:tf32]);
# 3. the accuracy of each float32 way against the float64 evaluation
#    (tools/device/tf32x3_truth.py, batch 4), attention fused;
# 4. a per-node profile of the last case.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
tests=${4:-*Attention*:*Transformer*:*Fusion*:*Tf32x3*}
here=$(dirname "$0")
mkdir -p "$out"
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
"$b/vigil_cuda_tests" --gtest_filter="$tests" >"$out/cuda_tests.log" 2>&1
echo "vigil_cuda_tests exit $?"
grep -E "\[ info \]|FAILED|PASSED|SKIPPED \[|Failure|Expected|Which is|relative" "$out/cuda_tests.log" | head -40
AB_EXTRA="--outputs-on-device --no-precision-hint" "$here/ab_probe.sh" "$b" "$out" VIGIL_FUSE_ATTENTION=0 "$cases" \
  "${cases##* }"
models=$(for c in $cases; do echo "${c%%:*}"; done | sort -u | paste -sd,)
python3 "$here/tf32x3_truth.py" "$b/vigil" --models "$models" --batch 4 | tee "$out/truth.md"
