#!/usr/bin/env bash
# Runs on the GPU machine (stop 48): the fused residual epilogue's order
# (Z before the bias) against the module before it, in one call: the CUDA
# tests, the first result with an empty CUDA compute cache in every process,
# and p50s of the TF32 float32 cases.
#   tools/device/residual_order_ab.sh NEWDEV OLDDEV OUT
set -u
new=$(cd "${1:?new devbuild}" && pwd)
old=$(cd "${2:?old devbuild}" && pwd)
out=${3:?output dir}
mkdir -p "$out"
d=$(dirname "$0")
(cd "$new" && VIGIL_CUDA_MODULE=$new/libvigil_cuda.so ./vigil_cuda_tests --gtest_brief=1 >"$out/cuda_tests.txt" 2>&1;
 echo "vigil_cuda_tests rc $?"; tail -3 "$out/cuda_tests.txt")
FRESH_CACHE=1 bash "$d/first_result_ab.sh" "$new" "$out" "VIGIL_CUDA_MODULE=$old/libvigil_cuda.so X=1" \
  "resnet50:fp16:64 resnet50:fp16:1 mobilenet_v2:fp16:64 mobilenet_v2:fp16:1"
bash "$d/variants_ab.sh" "$new" "$out" "resnet50:fp32:64:tf32 resnet50:fp32:1:tf32 mobilenet_v2:fp32:64:tf32" \
  "before=VIGIL_CUDA_MODULE=$old/libvigil_cuda.so" after
