#!/usr/bin/env python3
"""Builds ViT-B/16 as bench/peer_bench.py does (torchvision's architecture,
random weights, seed 0) as fp32 and fp16 ONNX models, and quantizes the fp32
one with onnxruntime.quantization.quantize_static in QDQ form, as
docs/int8.md tells users to for the GPU: int8 activations, symmetric (zero
point 0), per-channel int8 weights, calibrated on --calib random images.
Needs torch, torchvision, onnx and onnxruntime (the GPU machine has them).

    python3 bench/int8/make_vit_qdq.py OUT_DIR [--calib 8]

Writes OUT_DIR/vit_b_16_fp32.onnx, vit_b_16_fp16.onnx and
vit_b_16_qdq_s8.onnx (files already there are kept) and prints each path.
The batch dim is dynamic; the input is named "input_0".
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import peer_bench  # noqa: E402
from make_resnet50_qdq import images, quantize_qdq  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--calib", type=int, default=8)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model, _ = peer_bench.build("vit_b_16")
    for dtype in ("fp32", "fp16"):
        print(peer_bench.export(model, "vit_b_16", dtype, a.out), flush=True)
    fp32 = os.path.join(a.out, "vit_b_16_fp32.onnx")
    qdq = os.path.join(a.out, "vit_b_16_qdq_s8.onnx")
    if not os.path.exists(qdq):
        quantize_qdq(fp32, qdq, images(a.calib, 5), "input_0")
    print(qdq, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
