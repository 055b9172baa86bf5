#!/usr/bin/env bash
# Runs on the GPU machine: issue 17's GPU must-shows, the first lines of
#   1. a run whose planned device memory exceeds free memory: ResNet-50
#      float32 given a real input of BATCH images (default 32768, a 19.7 GB
#      .npy written here), no --gpu-mem-limit;
#   2. a crash in cudnnCreate under --isolate: crash_cudnn_create.so (built
#      from tests/doctor/fakes/crash_cudnn_create.c) preloaded in front of the
#      real cuDNN;
#   3. `vigil compare --repeat` catching nondeterminism: the test op Jitter,
#      whose CUDA kernel accumulates with float atomics;
#   4. `vigil doctor` (its verdict line) and `vigil doctor --json` with
#      CUDNN_LOGDEST_DBG=stdout, parsed as JSON.
#   tools/device/diagnosis_check.sh DEVBUILD OUT [BATCH]
# DEVBUILD holds vigil, vigil-worker, libvigil.so.0, libvigil_cuda.so and
# libcrash_cudnn_create.so (tools/device/stage_api.sh, plus the shim).
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
batch=${3:-32768}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
first() { head -n "${1:-4}"; }
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv,noheader
  echo "== 1. planned memory above free memory: ResNet-50 fp32, a real input of $batch images"
  python3 bench/export_models.py /tmp/m --models resnet50 --dtype fp32 | tail -1
  python3 - "$batch" <<'PY'
import sys, numpy as np
n = int(sys.argv[1])
a = np.lib.format.open_memmap("/tmp/big.npy", mode="w+", dtype=np.float32, shape=(n, 3, 224, 224))
chunk = np.random.default_rng(0).standard_normal((256, 3, 224, 224), dtype=np.float32)
for i in range(0, n, 256):
    a[i:i + 256] = chunk[: min(256, n - i)]
a.flush()
print(f"wrote /tmp/big.npy: {a.nbytes / 1e9:.1f} GB")
PY
  /usr/bin/time -f "(%e s)" "$b/vigil" run /tmp/m/resnet50_fp32.onnx --input /tmp/big.npy --backend cuda \
    --no-fallback 2> "$out/oom.txt" > /dev/null
  echo "exit $?"; first 6 < "$out/oom.txt"
  rm -f /tmp/big.npy
  echo "== 2. a crash in cudnnCreate under --isolate (crash_cudnn_create.so preloaded)"
  LD_PRELOAD=$b/libcrash_cudnn_create.so "$b/vigil" run examples/tiny_cnn.onnx \
    --input examples/tiny_cnn_input.npy --backend cuda --no-fallback --isolate 2> "$out/crash.txt"
  echo "exit $?"; first 8 < "$out/crash.txt"
  echo "== 3. compare --repeat catching nondeterminism (Jitter: float atomics on the GPU)"
  python3 - <<'PY'
import onnx
from onnx import helper, TensorProto
node = helper.make_node("Jitter", ["x"], ["y"], name="jitter", domain="ai.vigil.testing")
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.vigil.testing", 1)])
onnx.save(m, "/tmp/jitter.onnx")
PY
  VIGIL_ENABLE_TEST_OPS=1 "$b/vigil" compare /tmp/jitter.onnx --backends cuda,cpu --repeat 3 > "$out/repeat.txt" \
    2> /dev/null
  echo "exit $?"; first 3 < "$out/repeat.txt"
  echo "== 4. vigil doctor: the verdict line, and --json under CUDNN_LOGDEST_DBG=stdout"
  "$b/vigil" doctor > "$out/doctor.txt" 2>&1
  echo "exit $?"; first 3 < "$out/doctor.txt"
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stdout "$b/vigil" doctor --json > "$out/doctor.json" 2> /dev/null
  echo "exit $?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('valid JSON; first key:', next(iter(d)), '=', d[next(iter(d))])" "$out/doctor.json"
} 2>&1 | tee "$out/diagnosis_check.txt"
