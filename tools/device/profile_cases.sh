#!/usr/bin/env bash
# Runs on the GPU machine: `vigil bench --profile` (a synchronisation after
# every node) on cases as the A/B scripts name them, MODEL:DTYPE:BATCH[:tf32]
# (BERT included, with its token ids), to see where the time goes. Writes
# OUT/profile_CASE.txt and OUT/trace_CASE.json, and prints each p50 and
# its time per op type.
#   tools/device/profile_cases.sh DEVBUILD OUT "CASES"
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
for c in $cases; do
  IFS=: read -r m d n t <<<"$c"
  read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
  name=${c//:/_}
  echo "== $c p50 $("$b/vigil" bench "${a[@]}" --outputs-on-device --warmup 10 --iters 50 --json | p50) ms"
  "$b/vigil" bench "${a[@]}" --warmup 5 --iters 10 --profile "$out/trace_$name.json" --profile-top 40 \
    >"$out/profile_$name.txt" 2>&1
  sed -n '/by op type/,/trace:/p' "$out/profile_$name.txt"
done
