#!/usr/bin/env bash
# Runs on the GPU machine: assembles the onnxruntime-gpu wheel (bench/ort_peer.py's
# peer), which travels in parts, one per call on a warm machine (with the
# working tree, a call carries at most 64 MiB). Either the wheel itself
# (`split -b 40M -d onnxruntime_gpu-*.whl build-ort/ort.whl.part.`: seven parts) or,
# smaller, its unpacked `onnxruntime/` and dist-info without libonnxruntime.so and
# the TensorRT provider, which Python does not load (`tar cf - onnxruntime
# onnxruntime_gpu-*.dist-info | xz -9e | split -b 45M -d -a 1 - ortp.`: 186 MiB,
# five parts). The GPU machine's Python is 3.12: download the cp312 wheel here
# (`pip download --no-deps onnxruntime-gpu==1.31.1 --python-version 312
# --only-binary=:all: --platform manylinux_2_28_x86_64`); a cp311 one fails there
# with "No module named 'onnxruntime.capi.onnxruntime_pybind11_state'". Each part
# plus the working tree (about 20 MB) must stay under 64 MiB: 40M parts.
#   tools/device/ort_wheel.sh add build-ort/ort.whl.part.00   # keeps the part in /tmp/ortp
#   tools/device/ort_wheel.sh unpack                           # all parts there: unpacks into /tmp/ortw
# After `unpack`, PYTHONPATH=/tmp/ortw imports onnxruntime (CUDA 13 build; bench/ort_peer.py calls
# onnxruntime.preload_dlls() for PyTorch's CUDA libraries).
set -eu
case "${1:?add PART | unpack}" in
  add)
    mkdir -p /tmp/ortp
    cp "${2:?part}" /tmp/ortp/
    ls -la /tmp/ortp
    ;;
  unpack)
    if [ ! -d /tmp/ortw/onnxruntime ] && ls /tmp/ortp/ortp.* >/dev/null 2>&1; then
      rm -rf /tmp/ortw && mkdir -p /tmp/ortw
      cat /tmp/ortp/ortp.* | xz -d | tar -x -C /tmp/ortw
    elif [ ! -d /tmp/ortw/onnxruntime ]; then
      cat /tmp/ortp/ort.whl.part.* >/tmp/ort.whl
      rm -rf /tmp/ortw && mkdir -p /tmp/ortw
      python3 -c "import zipfile; zipfile.ZipFile('/tmp/ort.whl').extractall('/tmp/ortw')"
    fi
    PYTHONPATH=/tmp/ortw python3 -c "import onnxruntime as o; o.preload_dlls(); print('onnxruntime', o.__version__, o.get_available_providers())"
    ;;
esac
