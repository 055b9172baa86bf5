#!/usr/bin/env bash
# Runs on the GPU machine (it has torch, torchvision, onnxruntime): exports the
# real-model set, runs vigil's CPU backend on it against onnxruntime, and
# packs the small variants for the repository's CI test.
# Usage: tools/device/real_models.sh VIGIL_BINARY OUT_DIR
set -u
vigil=${1:?vigil binary}
out=${2:?output dir}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
{
  echo "== machine"; nproc; lscpu | grep -E 'Model name' ; python3 -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'
  echo "== full-size models"
  python3 tools/models/export_models.py /tmp/models_full --size full
  python3 tools/models/check_models.py "$vigil" /tmp/models_full --bench --markdown "$out/real_models_full.md"
  echo "== tiny models (shipped for CI)"
  python3 tools/models/export_models.py /tmp/models_tiny --size tiny \
    --only mobilenet_v2,vit_b_16,lstm_tagger,gru_regressor,unet,detection_head,text_encoder
  python3 tools/models/check_models.py "$vigil" /tmp/models_tiny --markdown "$out/real_models_tiny.md"
  tar -C /tmp -czf "$out/models_tiny.tar.gz" models_tiny
  ls -la "$out"
} 2>&1 | tee "$out/real_models.log"
