#!/usr/bin/env bash
# Runs on the GPU machine: the CUDA backend's checks in one call.
#   tools/device/cuda_check.sh DEVBUILD OUT [STEPS]
# DEVBUILD holds stripped vigil, vigil_conformance, vigil_cuda_tests,
# libvigil_cuda.so and onnxdata.tar.gz (Debian's libonnx-testdata, the same
# cases CI runs on the CPU). STEPS (default "tests conformance models"):
#   tests        vigil_cuda_tests (GPU kernels vs CPU, threads, determinism)
#   conformance  ONNX node tests with --backend cuda (no fallback)
#   onnxnode     the node tests of ONNX 1.23.2, generated on the machine
#                (tests/conformance/onnx_node), with --backend cuda
#   flow         PyTorch models with data-dependent If/Loop and a detector
#                ending in NonMaxSuppression, on the CPU and CUDA backends,
#                vs onnxruntime (tools/models/control_flow_models.py)
#   models       the real-model set exported from torchvision/PyTorch,
#                --backend cuda --no-fallback vs onnxruntime (float32)
#   lowp         the real-model set computing in float16 and in bfloat16,
#                vs onnxruntime float32 on the same rounded weights (1e-2)
#   jit          the real-model set under CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY
#   diag         the diagnoses for no visible GPU and a too-small memory limit
#   sanitizer    compute-sanitizer memcheck over the real-model set
#   int8         ResNet-50 QDQ int8 vs vigil fp16/fp32 (and ONNX Runtime's
#                CUDA provider with INT8_ARGS=--ort and its wheel on
#                PYTHONPATH), top-1 agreement (bench/int8/int8_bench.py)
#   int8vit      the same for ViT-B/16 (bench/int8/make_vit_qdq.py)
#   peer         bench/peer_bench.py: vigil vs PyTorch eager (and compiled
#                unless PEER_ARGS has --no-compile), fp16, batch 1 and 64;
#                PEER_ARGS="--ort" adds ONNX Runtime's CUDA provider (its
#                wheel on PYTHONPATH), "--models ...,bert_base --dtypes
#                fp16,fp32 [--tf32]" the rest of issue 19's table
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
  "$b/vigil" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda --no-fallback
  if has tests && [ -x "$b/vigil_cuda_tests" ]; then
    echo "== vigil_cuda_tests"
    "$b/vigil_cuda_tests" > "$out/cuda_tests.txt" 2>&1
    grep -A20 "Failure" "$out/cuda_tests.txt" | head -120
    tail -8 "$out/cuda_tests.txt"
  fi
  if has int8; then
    echo "== int8: ResNet-50 QDQ"
    python3 bench/int8/make_resnet50_qdq.py /tmp/vigil_int8_models 2>&1 | tail -3
    python3 bench/int8/int8_bench.py --vigil "$b/vigil" --models /tmp/vigil_int8_models --out /tmp/vigil_int8_work \
      ${INT8_ARGS:-} 2>&1 | grep -v "^+" | tail -80
    cp /tmp/vigil_int8_work/raw.json "$out/int8_raw.json"
  fi
  if has int8vit; then
    echo "== int8: ViT-B/16 QDQ"
    python3 -W ignore bench/int8/make_vit_qdq.py /tmp/vigil_int8_models 2>&1 | grep -v WARNING | tail -3
    python3 bench/int8/int8_bench.py --model vit_b_16 --vigil "$b/vigil" --models /tmp/vigil_int8_models \
      --out /tmp/vigil_int8_vit ${INT8_ARGS:-} 2>&1 | grep -v "^+" | tail -80
    cp /tmp/vigil_int8_vit/raw.json "$out/int8_vit_raw.json"
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
  if has onnxnode; then
    echo "== conformance --backend cuda on the node tests of ONNX 1.23.2 (generated here)"
    python3 -c "import onnx, numpy; print('onnx', onnx.__version__, 'numpy', numpy.__version__)"
    [ -d /tmp/onnxnode/node ] || python3 -W ignore tests/conformance/onnx_node/generate_node_data.py /tmp/onnxnode
    "$b/vigil_conformance" --backend cuda --root /tmp/onnxnode --suite node --verbose \
      --known tests/conformance/onnx_node/known_failures_cuda.txt \
      --cpu-known tests/conformance/onnx_node/known_failures.txt > "$out/conformance_cuda_onnx_node.txt" 2>&1
    grep -E "^(FAIL|NOW)" "$out/conformance_cuda_onnx_node.txt" | cut -c1-220 | head -60
    tail -2 "$out/conformance_cuda_onnx_node.txt"
    echo "-- the same tests on the CPU backend (the CPU list)"
    "$b/vigil_conformance" --root /tmp/onnxnode --suite node --known tests/conformance/onnx_node/known_failures.txt \
      | tail -2
  fi
  if has flow; then
    echo "== control flow and NMS models (export)"
    python3 tools/models/export_models.py /tmp/models_flow --only branch_gate,loop_rnn,nms_detector \
      > "$out/export_flow.txt" 2>&1
    grep -vE "Warning|warn|^ *$" "$out/export_flow.txt" | tail -8
    python3 -c "import json,sys; [print(m, json.load(open(f'/tmp/models_flow/{m}/model.json'))['ops']) for m in sys.argv[1:]]" \
      branch_gate loop_rnn nms_detector
    for be in cpu cuda; do
      echo "== control flow and NMS models --backend $be vs onnxruntime (float32)"
      python3 tools/models/check_models.py "$b/vigil" /tmp/models_flow --max-rel-l2 1e-5 \
        --run-arg=--backend --run-arg=$be --markdown "$out/flow_$be.md"
    done
    for m in branch_gate loop_rnn nms_detector; do
      echo "-- vigil inspect --backend cuda: $m"
      "$b/vigil" inspect /tmp/models_flow/$m/model.onnx --backend cuda 2>&1 | grep -iE "control-flow|fallback|If|Loop|NonMax" | head -8
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
  if has lowp; then
    for dt in fp16 bf16; do
      echo "== real models in $dt --backend cuda --no-fallback vs onnxruntime float32 (same rounded weights)"
      [ -d /tmp/models_$dt ] || python3 tools/models/export_models.py /tmp/models_$dt --size full --dtype $dt \
        > "$out/export_$dt.txt" 2>&1
      grep -E "^(exported|FAILED)" "$out/export_$dt.txt" | cut -c1-150
      python3 tools/models/check_models.py "$b/vigil" /tmp/models_$dt --max-rel-l2 1e-2 \
        --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback --markdown "$out/real_models_cuda_$dt.md"
      echo "== real models in $dt: --backend cuda --no-fallback vs vigil's CPU backend in $dt"
      python3 tools/models/check_models.py "$b/vigil" /tmp/models_$dt --max-rel-l2 1e-2 \
        --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback --reference-arg=--backend --reference-arg=cpu \
        --markdown "$out/real_models_cuda_vs_cpu_$dt.md"
    done
  fi
  if has jit; then
    echo "== real models under CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY"
    CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY python3 tools/models/check_models.py "$b/vigil" /tmp/models_full \
      --max-rel-l2 1e-4 --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback \
      --markdown "$out/real_models_cuda_jit.md"
  fi
  if has jit; then
    d=/tmp/models_full/resnet50
    for extra in "" "--tf32"; do
      echo "-- resnet50 float32 under GRAPH_JIT_ONLY $extra"
      CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY "$b/vigil" run $d/model.onnx --input input_0=$d/input_0.npy --backend cuda \
        --no-fallback $extra 2>&1 | head -24
    done
    if [ -d /tmp/models_fp16 ]; then
      echo "== float16 real models under GRAPH_JIT_ONLY"
      for n in mobilenet_v2 unet; do
        d=/tmp/models_fp16/$n
        CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY "$b/vigil" run $d/model.onnx --input input_0=$d/input_0.npy --backend cuda \
          --no-fallback 2>&1 | head -12
      done
      CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY python3 tools/models/check_models.py "$b/vigil" /tmp/models_fp16 \
        --max-rel-l2 1e-2 --run-arg=--backend --run-arg=cuda --run-arg=--no-fallback \
        --markdown "$out/real_models_cuda_fp16_jit.md"
    fi
  fi
  if has diag; then
    d=/tmp/models_full/resnet50
    echo "-- CUDA_VISIBLE_DEVICES=''"
    CUDA_VISIBLE_DEVICES="" "$b/vigil" run examples/tiny_cnn.onnx --input examples/tiny_cnn_input.npy --backend cuda
    echo "exit $?"
    echo "-- vigil compare cuda,cpu (default tolerance, then zero tolerance)"
    "$b/vigil" compare examples/tiny_cnn.onnx --backends cuda,cpu --input examples/tiny_cnn_input.npy --per-node
    echo "exit $?"
    "$b/vigil" compare examples/tiny_cnn.onnx --backends cuda,cpu --input examples/tiny_cnn_input.npy --per-node \
      --rtol 0 --atol 0 | head -12
    echo "-- --gpu-mem-limit 4M, resnet50 batch 1"
    "$b/vigil" run $d/model.onnx --input input_0=$d/input_0.npy --backend cuda --gpu-mem-limit 4M
    echo "exit $?"
  fi
  if has sanitizer; then
    echo "== compute-sanitizer memcheck"
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
    for d in /tmp/models_full/*/; do
      n=$(basename "$d")
      args=$(python3 -c "import json,sys; i=json.load(open('$d/model.json')); print(' '.join('--input '+x['name']+'=$d'+x['file'] for x in i['inputs']))")
      timeout 150 "$cs" --tool memcheck --error-exitcode 9 "$b/vigil" run "$d/model.onnx" $args --backend cuda --no-fallback \
        > "$out/memcheck_$n.txt" 2>&1
      echo "$n: exit $? $(grep -E 'ERROR SUMMARY' "$out/memcheck_$n.txt")"
    done
  fi
  if has peer; then
    echo "== peer benchmark"
    python3 bench/peer_bench.py "$b/vigil" /tmp/peer --markdown "$out/peer_bench.md" --json "$out/peer_bench.json" \
      ${PEER_ARGS:-} 2>&1 | grep -v Warning
  fi
} 2>&1 | tee "$out/cuda_check.log"
