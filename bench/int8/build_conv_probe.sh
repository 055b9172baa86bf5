#!/usr/bin/env bash
# Builds bench/int8/conv_probe.cpp here (CUDA toolkit and cuDNN 9 under
# /usr/local/cuda) into OUT_DIR (default build-int8probe/), linked with the
# CUDA runtime statically and cuDNN dynamically, so that it runs on the GPU
# machine with that machine's cuDNN:
#   bench/int8/build_conv_probe.sh [OUT_DIR]
# then there: OUT_DIR/int8_conv_probe BATCH [check]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-int8probe}
mkdir -p "$out"
cuda=/usr/local/cuda
src=(bench/int8/conv_probe.cpp src/backends/cuda/cudnn_graph.cpp src/backends/cuda/cuda_check.cpp
     src/backends/cuda/cudnn_log.cpp src/backends/cuda/plan_tuning.cpp src/backends/cuda/tuning_cache.cpp
     src/ir/dtype.cpp)
# The doctor's error translation and Status come from the main build's
# static libraries (scripts/setup.sh builds them into build/).
libs=(build/src/doctor/libvigil_doctor.a build/src/base/libvigil_base.a)
g++ -std=c++20 -O2 -DFMT_HEADER_ONLY -Isrc -I"$cuda/include" "${src[@]}" "${libs[@]}" -o "$out/int8_conv_probe" \
  -L"$cuda/lib64" -lcudnn -lcudart_static -ldl -lpthread -lrt
strip "$out/int8_conv_probe"
echo "$out/int8_conv_probe"
