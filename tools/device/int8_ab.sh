#!/usr/bin/env bash
# Runs on the GPU machine: before/after timings of one switch on ResNet-50
# QDQ int8 (bench/int8/make_resnet50_qdq.py), in one call on one GPU.
#   tools/device/int8_ab.sh DEVBUILD OUT "ENV=VALUE" [BATCHES] [TUNE]
# ENV=VALUE turns the change off ("before"). Each batch: `vigil bench` p50
# of 50 runs, inputs on the GPU, before and after alternating twice; with
# TUNE=tune also after --tune (the choices measured by a first bench with
# --tune --tuning-cache, then read); float16 for reference; then the three
# slowest nodes of a synchronised profile, before and after.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
switch=${3:?ENV=VALUE that turns the change off}
batches=${4:-64 1}
tune=${5:-}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
m=/tmp/vigil_int8_models
[ -f $m/resnet50_qdq_s8.onnx ] || python3 bench/int8/make_resnet50_qdq.py $m 2>&1 | tail -1
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
top3() { python3 - "$1" <<'PY'
import json, sys, collections
d = collections.defaultdict(list)
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("ph") == "X" and e["name"].startswith("node "):
        d[e["name"]].append(e["dur"])
rows = sorted(((sorted(v)[len(v) // 2] / 1000, k) for k, v in d.items()), reverse=True)[:3]
print("; ".join(f"{k} {t:.3f} ms" for t, k in rows))
PY
}
for n in $batches; do
  common=(--backend cuda --no-fallback --dim N=$n --inputs-on-device)
  q=$m/resnet50_qdq_s8.onnx
  echo "== batch $n, p50 ms: before ($switch) / after, twice"
  for i in 1 2; do
    echo "before $(env "$switch" "$b/vigil" bench $q "${common[@]}" --warmup 10 --iters 50 --json | p50)" \
      "after $("$b/vigil" bench $q "${common[@]}" --warmup 10 --iters 50 --json | p50)"
  done
  if [ "$tune" = tune ]; then
    cache=$out/tuning_b$n.tsv
    "$b/vigil" bench $q "${common[@]}" --warmup 0 --iters 1 --tune --tuning-cache "$cache" 2>&1 | grep -i "tuning cache"
    echo "after, tuned: $("$b/vigil" bench $q "${common[@]}" --warmup 10 --iters 50 --tuning-cache "$cache" --json | p50)"
  fi
  echo "float16 model: $("$b/vigil" bench $m/resnet50_fp16.onnx "${common[@]}" --warmup 10 --iters 50 --json | p50)"
  env "$switch" "$b/vigil" bench $q "${common[@]}" --warmup 3 --iters 10 --profile "$out/before_b$n.json" >/dev/null 2>&1
  "$b/vigil" bench $q "${common[@]}" --warmup 3 --iters 10 --profile "$out/after_b$n.json" >/dev/null 2>&1
  echo "slowest nodes before: $(top3 "$out/before_b$n.json")"
  echo "slowest nodes after:  $(top3 "$out/after_b$n.json")"
done
