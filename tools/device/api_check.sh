#!/usr/bin/env bash
# Runs on the GPU machine: the library issue's GPU checks in one call.
#   tools/device/api_check.sh DEVBUILD OUT
# DEVBUILD holds stripped vigil, vigil-worker, libvigil.so.0, libvigil_cuda.so
# and vigil_cuda_tests built on the build machine (sm_90), the Python extension
# (pyext/) and pytest (pylib/): tools/device/stage_api.sh makes it. Steps:
#   1. `vigil run --backend cuda --no-fallback` (the CLI through the public API)
#   2. vigil_cuda_tests (GPU kernels vs CPU, threads, determinism)
#   3. the Python extension built here against DEVBUILD/libvigil.so.0 (the
#      machine's Python differs from the build machine's), staged with the
#      library and the CUDA module beside it (found relative to libvigil.so),
#      then tests/python with torch CUDA tensors (DLPack)
#   4. ResNet-50 fp16 at batch 64 through Python (torch tensors in and out)
#      against `vigil bench --inputs-on-device`, same call
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "== vigil run --backend cuda --no-fallback"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy \
    --backend cuda --no-fallback
  echo "== vigil run --backend cuda --isolate (an isolated session: the run in vigil-worker)"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy \
    --backend cuda --no-fallback --isolate
  if [ -x "$b/vigil_cuda_tests" ]; then  # left out when the carry would pass 64 MiB
    echo "== vigil_cuda_tests"
    VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil_cuda_tests" --gtest_brief=1 > "$out/cuda_tests.txt" 2>&1
    grep -B2 -A15 "Failure" "$out/cuda_tests.txt" | head -80
    tail -4 "$out/cuda_tests.txt"
  fi
  echo "== python extension"
  rm -rf /tmp/pyext
  if [ -d "$b/pyext/vigil" ]; then   # built on the build machine (tools/device/stage_api.sh)
    mkdir -p /tmp/pyext && cp -r "$b/pyext/vigil" /tmp/pyext/
  else
    cmake -S tools/device/pyext -B /tmp/pyext -DVIGIL_LIB="$b/libvigil.so.0" -DPython_EXECUTABLE="$(command -v python3)" \
      > "$out/pyext.txt" 2>&1 && cmake --build /tmp/pyext -j16 >> "$out/pyext.txt" 2>&1 || tail -30 "$out/pyext.txt"
  fi
  cp "$b/libvigil.so.0" "$b/libvigil_cuda.so" "$b/vigil-worker" /tmp/pyext/vigil/
  export PYTHONPATH=/tmp/pyext${b:+:$b/pylib}
  python3 -c "import vigil; print('vigil', vigil.__version__, vigil.get_available_providers())"
  echo "== tests/python (GPU tests included)"
  (cd tests/python && python3 -m pytest -q -rs -p no:cacheprovider . 2>&1 | tail -25)
  echo "== ResNet-50 fp16 batch 64: Python + DLPack vs vigil bench --inputs-on-device"
  python3 bench/export_models.py /tmp/m --models resnet50 --dtype fp16 | tail -1
  for i in 1 2; do
    python3 tools/device/python_bench.py "$b/vigil" /tmp/m/resnet50_fp16.onnx 64 --iters 200
  done
  python3 tools/device/python_bench.py "$b/vigil" /tmp/m/resnet50_fp16.onnx 1 --iters 300
} 2>&1 | tee "$out/api_check.txt"
