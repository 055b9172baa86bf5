#!/usr/bin/env bash
# Runs on the GPU machine: the failure-forensics checks (issue 7) in one call.
#   tools/device/forensics_check.sh DEVBUILD OUT
# DEVBUILD holds stripped vigil, vigil_cuda_tests and libvigil_cuda.so (as for
# cuda_check.sh). Writes the fault-injection models (make_fault_models.py),
# then: the error-path GPU tests; --isolate on a device fault and on a CPU
# crash; reduce on a 122-node model with one faulting node, and the result in
# onnxruntime; compare --repeat and reduce --first-divergent against a
# deliberately diverging kernel; the environment diagnoses (no visible GPU,
# GRAPH_JIT_ONLY with the precompiled engines hidden, a too-small memory
# limit); and the cuDNN API log.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
v=$b/vigil
m=/tmp/fault
step() { echo; echo "== $*"; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 tools/models/make_fault_models.py $m
  step "vigil_cuda_tests (all; error paths and log capture included)"
  VIGIL_ENABLE_TEST_OPS=1 "$b/vigil_cuda_tests" > "$out/cuda_tests.txt" 2>&1
  grep -A20 "Failure" "$out/cuda_tests.txt" | head -60
  grep -E "^\[  (PASSED|FAILED|  SKIPPED)" "$out/cuda_tests.txt" | head; tail -3 "$out/cuda_tests.txt"

  export VIGIL_ENABLE_TEST_OPS=1
  step "device fault (OutOfBoundsWrite) in-process, no --isolate"
  "$v" run $m/oob_small.onnx --input x=$m/x.npy --backend cuda; echo "exit $?"
  step "device fault with --isolate (the rerun with VIGIL_CUDA_SYNC=1 localises it)"
  "$v" run $m/oob_small.onnx --input x=$m/x.npy --backend cuda --isolate; echo "exit $?"
  step "CPU crash (Crash falls back to the CPU) under --backend cuda --isolate"
  "$v" run $m/crash_chain.onnx --input x=$m/x.npy --backend cuda --isolate; echo "exit $?"
  step "clean model with --isolate --backend cuda"
  "$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --isolate; echo "exit $?"

  step "reduce: 122-node model, OutOfBoundsWrite at node 68, check = run --isolate --backend cuda"
  time "$v" reduce $m/oob_chain.onnx --input x=$m/x.npy -o "$out/reduced_oob.onnx" \
    --check "$v run {model} {inputs} --backend cuda --no-fallback" 2>&1 | tail -25
  echo "exit ${PIPESTATUS[0]}"
  python3 tools/models/check_reduced.py "$out/reduced_oob.onnx"; echo "check_reduced exit $?"
  step "reduce: the same chain with Crash (CPU) at node 68"
  "$v" reduce $m/crash_chain.onnx --input x=$m/x.npy -o "$out/reduced_crash.onnx" \
    --check "$v run {model} {inputs} --backend cuda" 2>&1 | tail -12
  python3 tools/models/check_reduced.py "$out/reduced_crash.onnx"; echo "check_reduced exit $?"

  step "compare --repeat 5: tiny_cnn (deterministic), then the Diverge model"
  "$v" compare examples/tiny_cnn.onnx --backends cuda,cpu --input examples/tiny_cnn_input.npy --repeat 5; echo "exit $?"
  "$v" compare $m/diverge.onnx --backends cuda,cpu --input x=$m/x.npy --repeat 5; echo "exit $?"
  step "reduce --first-divergent on the Diverge model"
  "$v" reduce $m/diverge.onnx --first-divergent --backends cuda,cpu --input x=$m/x.npy \
    -o "$out/reduced_diverge.onnx" 2>&1 | tail -15; echo "exit ${PIPESTATUS[0]}"
  unset VIGIL_ENABLE_TEST_OPS

  step "CUDA_VISIBLE_DEVICES=''"
  CUDA_VISIBLE_DEVICES="" "$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda
  echo "exit $?"
  step "--gpu-mem-limit 1K"
  "$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --gpu-mem-limit 1K
  echo "exit $?"
  step "GRAPH_JIT_ONLY with libcudnn_engines_precompiled hidden (bind-mounted away in a private mount namespace)"
  pre=$(ls /lib/x86_64-linux-gnu/libcudnn_engines_precompiled.so.9.* 2>/dev/null | head -1)
  echo "precompiled engines library: ${pre:-none}"
  cat > /tmp/jit.sh <<EOS
set -u
if [ -n "$pre" ]; then mount --bind /dev/null "$pre" || exit 97; fi
echo "hidden: \$(wc -c < "$pre" 2>/dev/null) bytes readable now"
export CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY VIGIL_CUDA_MODULE=$VIGIL_CUDA_MODULE
echo "-- float32 tiny_cnn, TF32 off"
"$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --no-fallback; echo "exit \$?"
echo "-- float32 tiny_cnn, --tf32"
"$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --no-fallback --tf32; echo "exit \$?"
echo "-- with --cudnn-log"
"$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --no-fallback --cudnn-log /tmp/jit_cudnn.log; echo "exit \$?"
echo "log lines: \$(wc -l < /tmp/jit_cudnn.log)"
EOS
  if unshare -m --propagation private true 2>/dev/null; then
    unshare -m --propagation private bash /tmp/jit.sh
  else
    echo "unshare -m is not permitted here; running with the library still visible"
    sed -i 's/^if \[ -n.*fi$/true/' /tmp/jit.sh; bash /tmp/jit.sh
  fi
  step "--cudnn-log on a clean run"
  "$v" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --cudnn-log /tmp/ok.log \
    > /dev/null; echo "exit $? log lines $(wc -l < /tmp/ok.log)"; head -5 /tmp/ok.log
  cp "$out"/*.onnx /tmp/ 2>/dev/null
} 2>&1 | tee "$out/forensics.log"
