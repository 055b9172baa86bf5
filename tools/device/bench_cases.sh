# Sourced by the device A/B scripts (ab_probe.sh, ab_binary.sh, module_ab.sh,
# first_result_ab.sh, variants_ab.sh): their cases, MODEL:DTYPE:BATCH[:tf32], as `vigil bench`
# runs them on bench/export_models.py's exports in /tmp/peer.

# Exports each MODEL:DTYPE of the cases that /tmp/peer lacks, and BERT's
# token ids (bert_inputs.py: they must be in range).
export_cases() {  # CASES
  local c m d n t md
  declare -A want=()
  for c in $1; do
    IFS=: read -r m d n t <<<"$c"
    want["$m:$d"]=1
  done
  mkdir -p /tmp/peer
  for md in "${!want[@]}"; do
    IFS=: read -r m d <<<"$md"
    [ -f "/tmp/peer/${m}_$d.onnx" ] || python3 bench/export_models.py /tmp/peer --models "$m" --dtype "$d" >/dev/null 2>&1 ||
      echo "export of $m $d failed"
  done
  python3 "$(dirname "${BASH_SOURCE[0]}")/bert_inputs.py" /tmp/peer
}

# The `vigil bench` arguments of one case (inputs on the GPU; AB_EXTRA
# appended), space-separated.
bench_args() {  # MODEL DTYPE BATCH TF32
  local a=(/tmp/peer/${1}_$2.onnx --backend cuda --no-fallback --dim N=$3 --inputs-on-device ${AB_EXTRA:-})
  [ "$1" = bert_base ] && a+=(-i input_ids=/tmp/peer/bert_ids_$3.npy -i attention_mask=/tmp/peer/bert_mask_$3.npy)
  [ "$4" = tf32 ] && a+=(--tf32)
  echo "${a[@]}"
}

# The p50 of `vigil bench --json` on stdin, or "error".
p50() { python3 -c "import json,sys; print(f\"{json.load(sys.stdin)['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
