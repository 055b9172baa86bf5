#!/usr/bin/env python3
"""Seed 000 in Python: int32 data fed to a model that expects float32.

With onnxruntime's CUDA execution provider this story ended in a crash inside
cudnn_cnn_infer64_8.dll. vigil has onnxruntime's names, checks every input
against the model before the GPU sees it, and raises an error that names the
input, what the model expects, what it got, and the fix:

    python3 seed000_int32_input.py MODEL.onnx [INPUT.npy]

MODEL.onnx: any model with a float32 input (tests/models/tiny/mobilenet_v2/
model.onnx in this repository). INPUT.npy, if given, is run first, the right
way. Exits 0 when the mistake was caught.
"""
import sys

import numpy as np

import vigil


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    # CUDA first, the CPU for what the GPU cannot run (and for machines with no
    # GPU: the session then says why in a RuntimeWarning).
    session = vigil.InferenceSession(argv[1], providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    print("runs on:", session.get_providers())
    x = session.get_inputs()[0]
    # Symbolic dims ("batch", None) taken as 1.
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in x.shape]
    print(f"input '{x.name}': {x.type} {x.shape}")

    if len(argv) > 2:
        (first, *_) = session.run(None, {x.name: np.load(argv[2])})
        print(f"the right input: first output {first.dtype}{list(first.shape)}, first values {first.ravel()[:5]}")

    # The mistake: np.int32 where the model wants np.float32. The byte size is
    # right, so nothing but the dtype can tell.
    wrong = np.ones(shape, dtype=np.int32)
    try:
        session.run(None, {x.name: wrong})
    except vigil.InvalidInputError as e:  # a vigil.VigilError
        print("\nseed 000, int32 for a float32 input:")
        print(e)  # the summary, then facts, likely causes, fixes
        print("facts:", e.diagnosis["facts"])
        print("fixes:", e.diagnosis["fixes"])
    else:
        print("the int32 input was not refused", file=sys.stderr)
        return 1

    # The fix the diagnosis gives.
    (out, *_) = session.run(None, {x.name: wrong.astype(np.float32)})
    print(f"\nwith .astype(np.float32): ran, first output {out.dtype}{list(out.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
