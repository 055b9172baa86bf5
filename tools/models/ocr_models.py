#!/usr/bin/env python3
"""The OCR-style CNNs of issue 19's CPU goal, laid out for bench/cpu_peer.py:
the three ONNX models that PyPI's rapidocr-onnxruntime 1.4.4 wheel carries
(PaddleOCR v4 detection at 1x3x640x640, v4 recognition at 1x3x48x320, v2
direction classifier at 1x3x48x192), each in OUT/NAME/ with model.onnx,
model.json and a uniform random input_0.npy (seed 0).

    pip download rapidocr-onnxruntime==1.4.4 --no-deps -d WHEELDIR
    python3 tools/models/ocr_models.py WHEELDIR/rapidocr_onnxruntime-1.4.4-py3-none-any.whl OUT
"""
import argparse
import json
import os
import zipfile

import numpy as np

SHAPES = {
    "ch_PP-OCRv4_det_infer": (1, 3, 640, 640),
    "ch_PP-OCRv4_rec_infer": (1, 3, 48, 320),
    "ch_ppocr_mobile_v2.0_cls_infer": (1, 3, 48, 192),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheel")
    ap.add_argument("out")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(a.wheel) as z:
        for name, shape in SHAPES.items():
            d = os.path.join(a.out, name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(z.read(f"rapidocr_onnxruntime/models/{name}.onnx"))
            import onnx
            first = onnx.load(os.path.join(d, "model.onnx")).graph.input[0].name
            np.save(os.path.join(d, "input_0.npy"), rng.uniform(0, 1, shape).astype(np.float32))
            with open(os.path.join(d, "model.json"), "w") as f:
                json.dump({"name": name, "inputs": [{"name": first, "file": "input_0.npy", "shape": list(shape),
                                                     "dtype": "float32"}]}, f)
            print(name, shape)


if __name__ == "__main__":
    main()
