#!/usr/bin/env bash
# Runs on the GPU machine: the performance changes of issue 6, before and
# after, in one call on one GPU.
#   tools/device/perf_check.sh DEVBUILD BEFORE OUT [MODELS] [BATCHES]
# DEVBUILD: the current stripped vigil and libvigil_cuda.so; BEFORE: the
# libvigil_cuda.so of the baseline (the same vigil binary loads either: the
# module interface did not change). For each model and batch (fp16, inputs
# already on the GPU) it runs `vigil bench`:
#   before       baseline module, --layout nchw
#   kernels      current module, --layout nchw (the faster own kernels)
#   nhwc         current module, --layout auto (NHWC convolutions)
# then `vigil bench --profile` of the final configuration.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
before=$(cd "${2:?baseline module dir}" && pwd)
out=${3:?output dir}
models=${4:-resnet50,mobilenet_v2,vit_b_16}
batches=${5:-1,64}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1
python3 bench/export_models.py /tmp/peer --models "$models" --dtype fp16
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
echo "| model | batch | before (ms) | kernels (ms) | nhwc (ms) | before/nhwc |"
echo "|---|---|---|---|---|---|"
for m in ${models//,/ }; do
  for n in ${batches//,/ }; do
    f=/tmp/peer/${m}_fp16.onnx
    common=(bench "$f" --backend cuda --no-fallback --dim N=$n --warmup 10 --iters 50 --inputs-on-device --json)
    t0=$(VIGIL_CUDA_MODULE=$before/libvigil_cuda.so "$b/vigil" "${common[@]}" --layout nchw | p50)
    t1=$(VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" "${common[@]}" --layout nchw | p50)
    t2=$(VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" "${common[@]}" --layout auto | p50)
    r=$(python3 -c "print(f'{$t0/$t2:.2f}x')" 2>/dev/null || echo -)
    echo "| $m | $n | $t0 | $t1 | $t2 | $r |"
  done
done | tee "$out/before_after.md"
for m in ${models//,/ }; do
  echo "== profile $m batch 64 (final)"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" bench /tmp/peer/${m}_fp16.onnx --backend cuda --no-fallback \
    --dim N=64 --warmup 3 --iters 5 --inputs-on-device --profile "$out/trace_${m}_b64.json" --profile-top 8 2>&1 \
    | sed -n '1,30p'
done
