#!/usr/bin/env bash
# Runs on the GPU machine: every quantized model of tools/quant/real_models.py
# through `vigil compare --backends cuda,cpu` (the GPU against the CPU
# reference, default tolerances), on the real model's own inputs.
#   tools/device/quant_compare.sh VIGIL QUANT_DIR [MODELS_DIR]
# QUANT_DIR/<model>/<kind>/model.onnx as real_models.py writes them (only the
# model.onnx files are needed); MODELS_DIR (default tests/models/tiny) holds
# <model>/input_*.npy. Prints one line per model: PASS/FAIL, its rel L2, and
# how many QDQ convolutions and matrix products ran in int8 (from `vigil
# inspect`).
set -u
vigil=${1:?vigil binary}
quant=${2:?quantized models dir}
models=${3:-tests/models/tiny}
pass=0
total=0
for m in "$quant"/*/*/model.onnx; do
  kind=$(basename "$(dirname "$m")")
  name=$(basename "$(dirname "$(dirname "$m")")")
  inputs=()
  for f in $(ls "$models/$name"/input_*.npy 2>/dev/null | sort -V); do inputs+=(-i "$f"); done
  out=$("$vigil" compare "$m" --backends cuda,cpu "${inputs[@]}" 2>&1)
  rc=$?
  total=$((total + 1))
  [ $rc -eq 0 ] && pass=$((pass + 1))
  int8=$("$vigil" inspect "$m" --backend cuda 2>&1 | grep -o "int8 on cuda: [0-9]* of [0-9]* QDQ [a-z ]* run in int8" |
         sed 's/^int8 on cuda: //; s/ run in int8$//' | paste -sd';' -)
  [ -n "$int8" ] || int8="no QDQ convolution or product"
  l2=$(echo "$out" | grep -o "rel L2 error [0-9.e+-]*" | sort -t' ' -k4 -g | tail -1)
  printf '%-14s %-8s %s  %s  (%s)\n' "$name" "$kind" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "${l2:-identical}" "$int8"
done
echo "passed $pass of $total"
