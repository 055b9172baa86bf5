#!/usr/bin/env python3
"""Exports real architectures with random weights to ONNX, with inputs and
onnxruntime reference outputs, for vigil's real-model checks.

    python3 tools/models/export_models.py OUT_DIR [--size full|tiny] [--only NAME,...] [--dtype fp32|fp16|bf16]

--only branch_gate,loop_rnn,nms_detector exports the control-flow models of
control_flow_models.py. For each model NAME it writes OUT_DIR/NAME/model.onnx, input_<i>.npy (named in
inputs.json) and ref_<i>.npy (onnxruntime CPU outputs), plus OUT_DIR/models.json
(name, opset, exporter, inputs, outputs, onnxruntime CPU latency).

Needs torch, torchvision, onnx, onnxruntime and numpy (the GPU machine has
them). --size tiny makes narrow variants small enough to ship in the repo.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class LstmTagger(nn.Module):
    def __init__(self, vocab=1000, emb=64, hidden=128, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=layers, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * hidden, 10)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


class GruRegressor(nn.Module):
    def __init__(self, feat=24, hidden=48):
        super().__init__()
        self.gru = nn.GRU(feat, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        y, h = self.gru(x)
        return self.head(y), h


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """A UNet-like encoder-decoder: ConvTranspose and Resize up-sampling, skip concats."""

    def __init__(self, base=32):
        super().__init__()
        self.e1, self.e2, self.e3 = conv_block(3, base), conv_block(base, 2 * base), conv_block(2 * base, 4 * base)
        self.up2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2)
        self.d2 = conv_block(4 * base, 2 * base)
        self.d1 = conv_block(3 * base, base)
        self.out = nn.Conv2d(base, 2, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        e3 = self.e3(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.up2(e3), e2], 1))
        d1 = self.d1(torch.cat([F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False), e1], 1))
        return self.out(d1)


class DetectionHead(nn.Module):
    """A YOLO-style two-level head: upsample (Resize nearest), Concat, Reshape, Transpose, Sigmoid."""

    def __init__(self, c=64, anchors=3, classes=20):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.SiLU(),
                                  nn.Conv2d(c, c, 3, stride=2, padding=1), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.SiLU())
        self.lateral = nn.Conv2d(2 * c, c, 1)
        self.p_small = nn.Conv2d(2 * c, anchors * (5 + classes), 1)
        self.p_large = nn.Conv2d(2 * c, anchors * (5 + classes), 1)
        self.a, self.k = anchors, 5 + classes

    def forward(self, x):
        f1 = self.stem(x)
        f2 = self.down(f1)
        up = F.interpolate(self.lateral(f2), scale_factor=2, mode="nearest")
        p1 = self.p_large(torch.cat([f1, up], 1))
        p2 = self.p_small(f2)
        outs = []
        for p in (p1, p2):
            n, _, h, w = p.shape
            outs.append(p.view(n, self.a, self.k, h, w).permute(0, 1, 3, 4, 2).reshape(n, -1, self.k))
        return torch.sigmoid(torch.cat(outs, 1))


class TextEncoder(nn.Module):
    """A BERT-like encoder: token + position embeddings, TransformerEncoder, pooled head."""

    def __init__(self, vocab=8000, d=256, heads=4, layers=4, seq=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, activation="gelu", dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 2)

    def forward(self, ids):
        h = self.enc(self.tok(ids) + self.pos[:, : ids.shape[1]])
        return self.head(self.norm(h[:, 0]))


def build(name, size):
    import torchvision.models as tvm
    from control_flow_models import build_control_flow
    tiny = size == "tiny"
    flow = build_control_flow(name, tiny)
    if flow is not None:
        return flow
    image = torch.randn(1, 3, 224, 224) if not tiny else torch.randn(1, 3, 96, 96)
    if name == "resnet50":
        return (tvm.resnet18() if tiny else tvm.resnet50()), (image,), 17
    if name == "mobilenet_v2":
        return tvm.mobilenet_v2(width_mult=0.35 if tiny else 1.0), (image,), 18
    if name == "efficientnet_b0":
        return tvm.efficientnet_b0(), (image,), 17
    if name == "vit_b_16":
        if tiny:
            m = tvm.VisionTransformer(image_size=96, patch_size=16, num_layers=2, num_heads=4, hidden_dim=128,
                                      mlp_dim=256, num_classes=10)
        else:
            m = tvm.vit_b_16()
        # torchvision initialises the classifier to zeros: the output would be
        # all zeros and no comparison could fail.
        nn.init.normal_(m.heads.head.weight, std=0.02)
        nn.init.normal_(m.heads.head.bias, std=0.02)
        return m, (image,), 17
    if name == "lstm_tagger":
        m = LstmTagger(hidden=32 if tiny else 128)
        return m, (torch.randint(0, 1000, (2, 17)),), 17
    if name == "gru_regressor":
        return GruRegressor(), (torch.randn(3, 29, 24),), 18
    if name == "unet":
        return UNet(base=8 if tiny else 32), (torch.randn(1, 3, 64, 64) if tiny else torch.randn(1, 3, 128, 128),), 18
    if name == "detection_head":
        return DetectionHead(c=16 if tiny else 64), (torch.randn(1, 3, 128, 128),), 17
    if name == "text_encoder":
        m = TextEncoder(vocab=1000, d=64, heads=4, layers=2) if tiny else TextEncoder()
        return m, (torch.randint(0, 1000, (2, 64)),), 17
    raise SystemExit(f"unknown model {name}")


ALL = ["resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16", "lstm_tagger", "gru_regressor", "unet",
       "detection_head", "text_encoder"]
# Data-dependent If/Loop and a detector ending in NonMaxSuppression
# (control_flow_models.py); exported only when named with --only.


def ort_latency(sess, feeds, iters=20):
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


class InDtype(nn.Module):
    """Runs `m` in `dtype` (float16/bfloat16) behind float32 inputs and
    outputs: the ONNX graph casts at its boundaries, so inputs and references
    stay float32 .npy files (numpy has no bfloat16)."""

    def __init__(self, m, dtype):
        super().__init__()
        self.m = m.to(dtype)
        self.dtype = dtype

    def forward(self, *xs):
        xs = [x.to(self.dtype) if x.is_floating_point() else x for x in xs]
        out = self.m(*xs)
        return out.float() if torch.is_tensor(out) else tuple(o.float() for o in out)


DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def export_one(name, size, out_dir, dtype="fp32"):
    import copy
    import onnx
    import onnxruntime as ort
    # The fused attention fast paths (aten::_native_multi_head_attention,
    # _transformer_encoder_layer_fwd) have no ONNX export; use the plain ops.
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(0)
    model, args, opset = build(name, size)
    model.eval()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    in_names = [f"input_{i}" for i in range(len(args))]
    ref_path = path
    if dtype != "fp32":
        # The reference is onnxruntime in float32 on the same rounded weights
        # and inputs; the exported model computes in float16/bfloat16.
        t = DTYPES[dtype]
        args = tuple(a.to(t).float() if a.is_floating_point() else a for a in args)
        ref_model = copy.deepcopy(model).to(t).float()
        ref_path = os.path.join(d, "reference_fp32.onnx")
        with torch.no_grad():
            torch.onnx.export(ref_model, args, ref_path, opset_version=opset, input_names=in_names, dynamo=False,
                              do_constant_folding=True)
        model = InDtype(model, t).eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=opset, input_names=in_names, dynamo=False,
                          do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(ref_path, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, (a, inp) in enumerate(zip(args, sess.get_inputs())):
        arr = a.numpy()
        np.save(os.path.join(d, f"input_{i}.npy"), arr)
        feeds[inp.name] = arr
    outs = sess.run(None, feeds)
    for i, o in enumerate(outs):
        np.save(os.path.join(d, f"ref_{i}.npy"), o)
    info = {
        "name": name, "opset": opset, "bytes": os.path.getsize(path), "dtype": dtype,
        "inputs": [{"name": inp.name, "file": f"input_{i}.npy", "shape": list(args[i].shape),
                    "dtype": str(args[i].numpy().dtype)} for i, inp in enumerate(sess.get_inputs())],
        # Names from the exported model (the float32 reference graph of a
        # float16/bfloat16 export names its outputs differently).
        "outputs": [{"name": o.name, "file": f"ref_{i}.npy", "shape": list(outs[i].shape)}
                    for i, o in enumerate(m.graph.output)],
        "ops": sorted({n.op_type for n in m.graph.node}),
        "ort_cpu_ms_1thread": ort_latency(sess, feeds),
        "ort_version": ort.__version__, "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--size", choices=["full", "tiny"], default="full")
    p.add_argument("--only", default="")
    p.add_argument("--dtype", choices=list(DTYPES), default="fp32",
                   help="compute dtype inside the model (inputs/outputs stay float32); the reference is "
                        "onnxruntime float32 on the same rounded weights")
    a = p.parse_args()
    names = a.only.split(",") if a.only else ALL
    results = []
    for n in names:
        try:
            info = export_one(n, a.size, a.out, a.dtype)
            print(f"exported {n}: opset {info['opset']}, {info['bytes'] / 1e6:.1f} MB, "
                  f"ort {info['ort_cpu_ms_1thread']:.2f} ms, ops {' '.join(info['ops'])}", flush=True)
            results.append(info)
        except Exception as e:  # keep going: one failed export must not hide the others
            print(f"FAILED to export {n}: {type(e).__name__}: {e}", flush=True)
            results.append({"name": n, "error": f"{type(e).__name__}: {e}"})
    with open(os.path.join(a.out, "models.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
