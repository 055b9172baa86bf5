#!/usr/bin/env bash
# Runs on the GPU machine: what autotuning (--tune, --tuning-cache) and
# page-locked input buffers change, in one call on one GPU (fp16, p50 of
# `vigil bench`). Models are exported as bench/peer_bench.py does.
#   tools/device/tuning_check.sh DEVBUILD OUT [MODELS] [BATCHES]
# Rows per model and batch:
#   heuristics    inputs on the GPU, the heuristics' first picks (default)
#   tuned         the same with the choices --tune measured and recorded
#                 (a first bench with --tune fills OUT/tuning.tsv; the timed
#                 one reads it without --tune: no measuring in its runs)
#   e2e pinned    inputs copied from page-locked host buffers every run
#   e2e pageable  --pageable-inputs: copied from ordinary host memory
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
models=${3:-resnet50,mobilenet_v2,vit_b_16}
batches=${4:-1,64}
mkdir -p "$out" /tmp/peer
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
python3 bench/export_models.py /tmp/peer --models "$models" --dtype fp16 2>&1 | grep -E "^exported"
cache=$out/tuning.tsv
rm -f "$cache"
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
{
echo "| model | batch | variant | p50 ms | variant/heuristics |"
echo "|---|---|---|---|---|"
for m in ${models//,/ }; do
  for n in ${batches//,/ }; do
    f=/tmp/peer/${m}_fp16.onnx
    common=(bench "$f" --backend cuda --no-fallback --dim N=$n --warmup 10 --iters 100 --json)
    base=$("$b/vigil" "${common[@]}" --inputs-on-device | p50)
    row() { echo "| $m | $n | $1 | $2 | $(python3 -c "print(f'{$2/$base:.3f}')" 2>/dev/null || echo -) |"; }
    echo "| $m | $n | heuristics | $base | 1.000 |"
    "$b/vigil" bench "$f" --backend cuda --no-fallback --dim N=$n --warmup 0 --iters 1 --tune \
      --tuning-cache "$cache" | grep -E "^backend|^load" >&2
    row tuned "$("$b/vigil" "${common[@]}" --inputs-on-device --tuning-cache "$cache" | p50)"
    row "e2e pinned" "$("$b/vigil" "${common[@]}" | p50)"
    row "e2e pageable" "$("$b/vigil" "${common[@]}" --pageable-inputs | p50)"
  done
done
} | tee "$out/tuning.md"
echo "records in the cache: $(grep -c . "$cache")"
