#!/usr/bin/env bash
# Runs on a many-core machine (the GPU machine has 16 cores): every libFuzzer
# target of tests/fuzz for RUNS executions in all (default 10,000,000), as
# WORKERS processes of RUNS/WORKERS each sharing one corpus, all targets at
# once; then per target: executions, the slowest worker's wall time, exec/s,
# coverage, crashes.
#   tools/device/fuzz_check.sh DEVFUZZ OUT [RUNS [WORKERS [SECONDS [TARGET...]]]]
# DEVFUZZ holds fuzz_<target> built by scripts/fuzz.sh (build-fuzz/tests/fuzz,
# debug info stripped) and seeds/ (build-fuzz/seeds). SECONDS caps each worker
# (default 540, inside the device's 10-minute call).
set -u
b=$(cd "${1:?devfuzz dir}" && pwd)
out=${2:?output dir}
runs=${3:-10000000}
workers=${4:-2}
seconds=${5:-540}
shift 5 2>/dev/null || shift $#
mkdir -p "$out"
declare -A max_len=([onnx_model]=8192 [npy]=4096 [tensor_proto]=4096 [elf]=65536 [ld_so_cache]=65536
                    [isolation_wire]=4096)
targets=("$@")
((${#targets[@]})) || targets=(onnx_model npy tensor_proto elf ld_so_cache isolation_wire)
echo "== $(nproc) cores; ${#targets[@]} targets x $workers workers x $((runs / workers)) runs"
for t in "${targets[@]}"; do
  mkdir -p "/tmp/corpus/$t" "$out/artifacts/$t"
  for ((w = 0; w < workers; ++w)); do
    ( start=$(date +%s.%N)
      "$b/fuzz_$t" "/tmp/corpus/$t" "$b/seeds/$t" -runs=$((runs / workers)) -max_len="${max_len[$t]}" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_total_time="$seconds" \
        -artifact_prefix="$out/artifacts/$t/" > "$out/$t.$w.log" 2>&1
      echo "rc $? wall $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >> "$out/$t.$w.log" ) &
  done
done
wait
{
echo "| target | executions | wall s (slowest worker) | exec/s (all workers) | cov / ft | crashes |"
echo "|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
  execs=0 wall=0 cov=""
  for ((w = 0; w < workers; ++w)); do
    log=$out/$t.$w.log
    e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    s=$(sed -n 's/^rc [0-9]* wall //p' "$log" | tail -1)
    execs=$((execs + ${e:-0}))
    wall=$(awk -v a="${s:-0}" -v b="$wall" 'BEGIN { print (a > b ? a : b) }')
    c=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
    cov=${c:-$cov}
  done
  crashes=$(find "$out/artifacts/$t" -type f | wc -l)
  rate=$(awk -v e="$execs" -v w="$wall" 'BEGIN { printf "%d", (w > 0 ? e / w : 0) }')
  echo "| $t | $execs | $wall | $rate | ${cov#cov: } | $crashes |"
  if ((crashes)); then grep -h -m1 -E 'ERROR: |runtime error|deadly signal' "$out/$t".*.log; fi
done
} | tee "$out/table.md"
