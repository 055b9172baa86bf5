#!/usr/bin/env bash
# Runs on the GPU machine: before/after timings of a change in the vigil
# binary itself (a graph pass, which no module switch turns off), in one
# call on one GPU:
#   tools/device/ab_binary.sh OLD_VIGIL NEW_VIGIL OUT CASES
# Each case of CASES is MODEL:DTYPE:BATCH[:tf32] (bench/export_models.py's
# exports in /tmp/peer, as tools/device/ab_probe.sh makes them); both
# binaries load the module in VIGIL_CUDA_MODULE. `vigil bench` p50 of 50
# runs, inputs and outputs on the GPU, old and new alternating twice.
set -u
old=${1:?old vigil}
new=${2:?new vigil}
out=${3:?output dir}
cases=${4:?cases}
mkdir -p "$out" /tmp/peer
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
{
echo "| case | before | after | before | after | before/after |"
echo "|---|---|---|---|---|---|"
for c in $cases; do
  IFS=: read -r m d n t <<<"$c"
  a=(/tmp/peer/${m}_$d.onnx --backend cuda --no-fallback --dim N=$n --inputs-on-device --outputs-on-device
     --no-precision-hint --warmup 10 --iters 50 --json)
  [ "$m" = bert_base ] && a+=(-i input_ids=/tmp/peer/bert_ids_$n.npy -i attention_mask=/tmp/peer/bert_mask_$n.npy)
  [ "${t:-}" = tf32 ] && a+=(--tf32)
  r=()
  for i in 1 2; do
    r+=("$("$old" bench "${a[@]}" | p50)")
    r+=("$("$new" bench "${a[@]}" | p50)")
  done
  echo "| $c | ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} | $(python3 -c "print(f'{min(${r[0]},${r[2]})/min(${r[1]},${r[3]}):.2f}x')" 2>/dev/null || echo -) |"
done
} | tee "$out/ab_binary.md"
