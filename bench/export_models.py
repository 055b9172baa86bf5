#!/usr/bin/env python3
"""Exports the peer benchmark's models to ONNX, as bench/peer_bench.py does
(torchvision architectures, random weights, seed 0, BatchNorm statistics
calibrated, a dynamic batch dim), for the device scripts in tools/device:

    python3 bench/export_models.py OUT_DIR [--models resnet50,mobilenet_v2,vit_b_16] [--dtype fp16]

Writes OUT_DIR/<model>_<dtype>.onnx (a file already there is kept) and
prints "exported PATH" per model. Needs torch and torchvision.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bench  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16")
    p.add_argument("--dtype", choices=sorted(peer_bench.DTYPES), default="fp16")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        model, _ = peer_bench.build(name)
        print("exported", peer_bench.export(model, name, a.dtype, a.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
