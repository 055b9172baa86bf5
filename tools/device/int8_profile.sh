#!/usr/bin/env bash
# Runs on the GPU machine: where ResNet-50 QDQ int8 spends its time, by
# node, with the heuristics' engines and with --tune, beside float16.
#   tools/device/int8_profile.sh DEVBUILD OUT [BATCHES]
# DEVBUILD holds the stripped vigil and libvigil_cuda.so. Models from
# bench/int8/make_resnet50_qdq.py. Each case: `vigil bench` p50 of 50 runs
# (inputs on the GPU), then a synchronised per-node profile (top 12).
# The stem's float-route candidates are forced one by one with
# VIGIL_QCONV_FLOAT_ROUTE (a measurement switch) under --tune.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
batches=${3:-64 1}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
m=/tmp/vigil_int8_models
[ -f $m/resnet50_qdq_s8.onnx ] || python3 bench/int8/make_resnet50_qdq.py $m 2>&1 | tail -2
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
for n in $batches; do
  common=(--backend cuda --no-fallback --dim N=$n --inputs-on-device)
  cache=$out/tuning_b$n.tsv
  echo "== batch $n: p50 ms"
  echo "int8 heuristics: $("$b/vigil" bench $m/resnet50_qdq_s8.onnx "${common[@]}" --warmup 10 --iters 50 --json | p50)"
  "$b/vigil" bench $m/resnet50_qdq_s8.onnx "${common[@]}" --warmup 0 --iters 1 --tune --tuning-cache "$cache" \
    2>&1 | grep -i "tuning" | head -3
  echo "int8 tuned: $("$b/vigil" bench $m/resnet50_qdq_s8.onnx "${common[@]}" --warmup 10 --iters 50 \
    --tuning-cache "$cache" --json | p50)"
  grep "qconv-route" "$cache" | cut -f3- | cut -c1-200
  echo "fp16 heuristics: $("$b/vigil" bench $m/resnet50_fp16.onnx "${common[@]}" --warmup 10 --iters 50 --json | p50)"
  for k in f16fused f16acc f32fused f32acc; do
    echo "int8 stem forced $k, tuned: $(VIGIL_QCONV_FLOAT_ROUTE=$k "$b/vigil" bench $m/resnet50_qdq_s8.onnx \
      "${common[@]}" --warmup 10 --iters 50 --tune --json | p50)"
  done
  echo "-- profile: int8 heuristics"
  "$b/vigil" bench $m/resnet50_qdq_s8.onnx "${common[@]}" --warmup 5 --iters 10 --profile "$out/int8_b$n.json" \
    --profile-top 12 2>&1 | tail -16
  echo "-- profile: int8 tuned"
  "$b/vigil" bench $m/resnet50_qdq_s8.onnx "${common[@]}" --warmup 5 --iters 10 --tuning-cache "$cache" \
    --profile "$out/int8_tuned_b$n.json" --profile-top 12 2>&1 | tail -16
  echo "-- profile: fp16 heuristics"
  "$b/vigil" bench $m/resnet50_fp16.onnx "${common[@]}" --warmup 5 --iters 10 --profile "$out/fp16_b$n.json" \
    --profile-top 12 2>&1 | tail -16
done
