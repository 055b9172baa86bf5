#!/usr/bin/env bash
# Runs on the GPU machine: several variants of one module, in one call on one
# GPU, each timed twice, the variants interleaved so that clock drift shows.
#   tools/device/variants_ab.sh DEVBUILD OUT CASES VARIANT...
# DEVBUILD holds the stripped vigil and libvigil_cuda.so. Each case of CASES
# (space-separated) is MODEL:DTYPE:BATCH[:tf32], timed with `vigil bench`
# (inputs on the GPU, p50 of 50 runs). Each VARIANT is NAME or
# NAME=ITEM,ITEM...: an ITEM ENV=V sets a developer switch for that variant
# only, an ITEM starting with -- is a `vigil bench` flag (--tf32x3-convs).
# Models are exported as bench/peer_bench.py exports them. AB_EXTRA adds
# flags to every `vigil bench` (e.g. --outputs-on-device). Writes OUT/variants.md.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
shift 3
[ $# -ge 1 ] || { echo "give at least one VARIANT" >&2; exit 2; }
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
names=()
for v in "$@"; do names+=("${v%%=*}"); done
{
printf '| case |'; for nm in "${names[@]}"; do printf ' %s | %s |' "$nm" "$nm"; done; echo
printf '|---|'; for _ in "${names[@]}"; do printf -- '---|---|'; done; echo
for c in $cases; do
  IFS=: read -r m d n t <<<"$c"
  read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
  declare -A r=()
  for i in 1 2; do
    for v in "$@"; do
      nm=${v%%=*}
      items=() envs=() flags=()
      [ "$v" != "$nm" ] && IFS=, read -r -a items <<<"${v#*=}"
      for it in "${items[@]}"; do
        case "$it" in --*) flags+=("$it") ;; *) envs+=("$it") ;; esac
      done
      r["$nm:$i"]=$(env "${envs[@]}" "$b/vigil" bench "${a[@]}" "${flags[@]}" --warmup 10 --iters 50 --json | p50)
    done
  done
  printf '| %s |' "$c"; for nm in "${names[@]}"; do printf ' %s | %s |' "${r[$nm:1]}" "${r[$nm:2]}"; done; echo
  unset r
done
} | tee "$out/variants.md"
