#!/usr/bin/env bash
# Runs on the GPU machine: before/after timings of one switch, in one call on
# one GPU, then per-node profiles of the models that matter.
#   tools/device/ab_probe.sh DEVBUILD OUT "ENV=VALUE" CASES [PROFILES]
# DEVBUILD holds the stripped vigil and libvigil_cuda.so. Each case of CASES
# (space-separated) is MODEL:DTYPE:BATCH[:tf32]; it is timed with `vigil
# bench` (inputs on the GPU, p50 of 50 runs) twice with ENV=VALUE set
# ("before": the switch that turns the change off) and twice without
# ("after"), alternating, so that clock drift shows. PROFILES (same syntax)
# are then profiled with `vigil bench --profile`, the top 30 nodes.
# Models are exported as bench/peer_bench.py exports them (BERT's token ids
# are written to .npy files, as they must be in range). AB_EXTRA adds flags
# to every `vigil bench` (e.g. --outputs-on-device).
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
switch=${3:?ENV=VALUE that turns the change off}
cases=${4:?cases}
profiles=${5:-}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases $profiles"
{
echo "| case | before ($switch) | after | before | after | before/after |"
echo "|---|---|---|---|---|---|"
for c in $cases; do
  IFS=: read -r m d n t <<<"$c"
  read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
  r=()
  for i in 1 2; do
    r+=("$(env "$switch" "$b/vigil" bench "${a[@]}" --warmup 10 --iters 50 --json | p50)")
    r+=("$("$b/vigil" bench "${a[@]}" --warmup 10 --iters 50 --json | p50)")
  done
  echo "| $c | ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} | $(python3 -c "print(f'{min(${r[0]},${r[2]})/min(${r[1]},${r[3]}):.2f}x')" 2>/dev/null || echo -) |"
done
} | tee "$out/ab.md"
for c in $profiles; do
  IFS=: read -r m d n t <<<"$c"
  read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
  echo "== profile $c"
  "$b/vigil" bench "${a[@]}" --warmup 3 --iters 5 --profile "$out/trace_${m}_${d}_b$n.json" --profile-top 30 2>&1 |
    sed -n '1,60p'
done
