#!/usr/bin/env bash
# Runs on the GPU machine: issue 6's switches, each turned off alone, in one
# call on one GPU (fp16, inputs already on the GPU, p50 of `vigil bench`).
#   tools/device/speedup_check.sh DEVBUILD OUT [MODELS] [BATCHES]
# DEVBUILD: the current stripped vigil and libvigil_cuda.so, and optionally
# DEVBUILD/before/{vigil,libvigil_cuda.so}, an earlier build (its own binary:
# the module interface version may differ). Rows per model and batch:
#   final        current build, defaults (CUDA graphs recorded and replayed)
#   before       the earlier build, its defaults
#   no graphs    --cuda-graphs off
#   <switch>=<v> one optimisation turned off through its environment switch
# "final/variant" > 1 means the optimisation that variant turns off pays.
# Models are exported as bench/peer_bench.py does, into /tmp/peer.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
models=${3:-resnet50,mobilenet_v2,vit_b_16}
batches=${4:-1,64}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1
python3 bench/export_models.py /tmp/peer --models "$models" --dtype fp16 2>&1 | grep -E "^exported"
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
switches() {
  case $1 in
    resnet50) echo "VIGIL_POOL_NHWC=0" ;;
    mobilenet_v2) echo "VIGIL_DEPTHWISE=cudnn VIGIL_RELU6_PROLOGUE=0 VIGIL_POOL_NHWC=0" ;;
    vit_b_16) echo "VIGIL_FUSE_ATTENTION=0 VIGIL_ATTENTION_BATCH_FIRST=0 VIGIL_ATTENTION_KERNEL=wmma VIGIL_FUSE_RESIDUAL=0 VIGIL_PATCH_GEMM=0 VIGIL_CANCEL_TRANSPOSES=0 VIGIL_ATTENTION_SHAPE=tiles" ;;
  esac
}
{
echo "| model | batch | variant | p50 ms | variant/final |"
echo "|---|---|---|---|---|"
for m in ${models//,/ }; do
  for n in ${batches//,/ }; do
    f=/tmp/peer/${m}_fp16.onnx
    common=(bench "$f" --backend cuda --no-fallback --dim N=$n --warmup 10 --iters 100 --inputs-on-device --json)
    final=$(VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" "${common[@]}" | p50)
    echo "| $m | $n | final | $final | 1.00 |"
    row() {  # LABEL TIME
      r=$(python3 -c "print(f'{$2/$final:.2f}')" 2>/dev/null || echo -)
      echo "| $m | $n | $1 | $2 | $r |"
    }
    [ -x "$b/before/vigil" ] && row before "$(VIGIL_CUDA_MODULE=$b/before/libvigil_cuda.so "$b/before/vigil" "${common[@]}" | p50)"
    row "no graphs" "$(VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" "${common[@]}" --cuda-graphs off | p50)"
    for s in $(switches $m); do
      row "$s" "$(env $s VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" "${common[@]}" | p50)"
    done
  done
done
} | tee "$out/switches.md"
for m in ${models//,/ }; do
  echo "== $m batch 1: what the graphs did"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" bench /tmp/peer/${m}_fp16.onnx --backend cuda --no-fallback \
    --dim N=1 --warmup 3 --iters 20 --inputs-on-device | grep -E "latency|cuda graphs"
  echo "== profile $m batch 64"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" bench /tmp/peer/${m}_fp16.onnx --backend cuda --no-fallback \
    --dim N=64 --warmup 3 --iters 5 --inputs-on-device --profile "/tmp/trace_${m}_b64.json" --profile-top 10 2>&1 \
    | grep -v "^trace\|^profiling"
done
