#!/usr/bin/env bash
# Runs on the GPU machine: where ResNet-50 QDQ int8's first run goes, and
# what --tune gives the int8 and exact float32 models, in one call.
#   tools/device/first_run_probe.sh DEVBUILD OUT [BATCH]
# 1. time to first result of the int8 model (load + first run), three fresh
#    processes (the first pays cold caches);
# 2. one more with cuDNN's API log, summarised by call (cudnn_log_summary.py):
#    which cuDNN calls the first run spends its time in;
# 3. p50 with the heuristics' picks, then a --tune run recording into a
#    tuning cache, then p50 reading it: int8, and ResNet-50 and MobileNetV2
#    float32 exported as bench/peer_bench.py exports them (TF32 off).
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
n=${3:-64}
mkdir -p "$out" /tmp/peer
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
q=/tmp/vigil_int8_models
[ -f $q/resnet50_qdq_s8.onnx ] || python3 bench/int8/make_resnet50_qdq.py $q 2>&1 | tail -1
python3 bench/export_models.py /tmp/peer --models resnet50,mobilenet_v2 --dtype fp32 2>&1 | grep -E "^exported"
int8=$q/resnet50_qdq_s8.onnx
ttfr() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"load {j['load_ms']:.0f} ms + first run {j['first_run_ms']:.0f} ms\")" 2>/dev/null || echo error; }
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
one=(--backend cuda --no-fallback --dim N=$n --warmup 0 --iters 1 --no-precision-hint)
for i in 1 2 3; do echo "int8 first result, process $i: $("$b/vigil" bench "$int8" "${one[@]}" --json | ttfr)"; done
CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=/tmp/cudnn_first.log "$b/vigil" bench "$int8" "${one[@]}" --json | ttfr
echo "cuDNN log: $(grep -c '^I! ' /tmp/cudnn_first.log) calls; by time to the next call:"
python3 tools/device/cudnn_log_summary.py /tmp/cudnn_first.log
grep -o 'CUDNN_ATTR_ENGINE_GLOBAL_INDEX[^;]*' /tmp/cudnn_first.log | sort | uniq -c | sort -rn | head -5
timed=(--backend cuda --no-fallback --dim N=$n --inputs-on-device --warmup 10 --iters 50 --no-precision-hint --json)
for f in "$int8" /tmp/peer/resnet50_fp32.onnx /tmp/peer/mobilenet_v2_fp32.onnx; do
  c=/tmp/tune_$(basename "$f" .onnx).tsv
  rm -f "$c"
  h=$("$b/vigil" bench "$f" "${timed[@]}" | p50)
  "$b/vigil" bench "$f" "${one[@]}" --tune --tuning-cache "$c" 2>&1 | grep -iE "tun" | head -3
  t=$("$b/vigil" bench "$f" "${timed[@]}" --tuning-cache "$c" | p50)
  h2=$("$b/vigil" bench "$f" "${timed[@]}" | p50)
  echo "| $(basename "$f") | $n | heuristics $h, $h2 | tuned $t |"
done | tee "$out/tuned.md"
