#!/usr/bin/env python3
"""Builds ResNet-50 (torchvision's layout: 7x7 stem, bottleneck blocks 3-4-6-3,
BatchNorm folded into the convolutions) as an fp32 ONNX model with seeded
random weights, and quantizes it with onnxruntime.quantization.quantize_static
in QDQ form, the way docs/int8.md tells users to for the GPU: int8 activations,
symmetric (zero point 0), per-channel int8 weights, calibrated on random
images. Needs onnx, numpy and onnxruntime; no torch.

    python3 bench/int8/make_resnet50_qdq.py OUT_DIR [--calib 32] [--seed 0]

Writes OUT_DIR/resnet50_fp32.onnx, OUT_DIR/resnet50_fp16.onnx (the same
weights in float16, input and output too) and OUT_DIR/resnet50_qdq_s8.onnx
(files already there are kept) and prints each path. The batch dim is dynamic.
The weights are He-initialised and each convolution's output is rescaled on
calibration images so that activations keep unit scale through the depth,
as trained BatchNorm statistics would (random weights alone let them grow
with every residual block).
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.n = 0

    def name(self, p):
        self.n += 1
        return f"{p}_{self.n}"

    def const(self, arr, p):
        nm = self.name(p)
        self.inits.append(numpy_helper.from_array(arr, nm))
        return nm

    def conv(self, x, cin, cout, k, stride=1, relu=True):
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, self.const(w, "w"), self.const(b, "b")], [y],
                                           kernel_shape=[k, k], strides=[stride, stride],
                                           pads=[k // 2] * 4, name=y))
        if relu:
            r = self.name("relu")
            self.nodes.append(helper.make_node("Relu", [y], [r], name=r))
            return r
        return y

    def bottleneck(self, x, cin, width, stride):
        cout = width * 4
        h = self.conv(x, cin, width, 1)
        h = self.conv(h, width, width, 3, stride)
        h = self.conv(h, width, cout, 1, relu=False)
        if stride != 1 or cin != cout:
            x = self.conv(x, cin, cout, 1, stride, relu=False)
        s = self.name("add")
        self.nodes.append(helper.make_node("Add", [h, x], [s], name=s))
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [s], [r], name=r))
        return r


def build(seed):
    b = Builder(seed)
    x = b.conv("input", 3, 64, 7, 2)
    p = b.name("pool")
    b.nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                    name=p))
    x, cin = p, 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            x = b.bottleneck(x, cin, width, stride if i == 0 else 1)
            cin = width * 4
    g = b.name("gap")
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], [g], name=g))
    f = b.name("flatten")
    b.nodes.append(helper.make_node("Flatten", [g], [f], axis=1, name=f))
    w = (b.rng.standard_normal((1000, 2048)) * np.sqrt(1.0 / 2048)).astype(np.float32)
    bias = (b.rng.standard_normal(1000) * 0.1).astype(np.float32)
    b.nodes.append(helper.make_node("Gemm", [f, b.const(w, "fc_w"), b.const(bias, "fc_b")], ["logits"], transB=1,
                                    name="fc"))
    graph = helper.make_graph(b.nodes, "resnet50", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                  ["N", 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])], b.inits)
    # IR 10: what onnxruntime 1.30 (the GPU machine's) still reads.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="vigil-bench",
                             ir_version=10)


def images(n, seed):
    rng = np.random.default_rng(seed)
    # Smooth random images (a low-resolution field upsampled), normalised like ImageNet inputs.
    low = rng.standard_normal((n, 3, 14, 14)).astype(np.float32)
    return np.repeat(np.repeat(low, 16, axis=2), 16, axis=3) + 0.3 * rng.standard_normal((n, 3, 224, 224)).astype(
        np.float32)


def quantize_qdq(fp32, qdq, calib, input_name):
    """quantize_static in QDQ form as docs/int8.md says for the GPU: int8 symmetric activations (zero point 0),
    per-channel int8 symmetric weights, calibrated on the images of `calib`, one at a time."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib[i:i + 1] for i in range(len(calib)))

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {input_name: x}

    quantize_static(fp32, qdq, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})


def normalise(model, calib):
    """Rescales each Conv's weights and bias, in order, so that its output has unit RMS on `calib`."""
    import onnxruntime as ort
    inits = {i.name: i for i in model.graph.initializer}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    for conv in convs:
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        del probe.graph.output[:]
        probe.graph.output.append(helper.make_tensor_value_info(conv.output[0], TensorProto.FLOAT, None))
        sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        y = sess.run(None, {"input": calib})[0]
        rms = float(np.sqrt(np.mean(np.square(y, dtype=np.float64))))
        for nm in conv.input[1:]:
            t = inits[nm]
            t.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(t) / rms).astype(np.float32), nm))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--calib", type=int, default=32, help="calibration images (default 32)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fp32 = os.path.join(a.out, "resnet50_fp32.onnx")
    qdq = os.path.join(a.out, "resnet50_qdq_s8.onnx")
    calib = images(a.calib, a.seed + 1)
    if not os.path.exists(fp32):
        model = build(a.seed)
        normalise(model, calib[:8])
        onnx.checker.check_model(model)
        onnx.save(model, fp32)
    print(fp32, flush=True)
    fp16 = os.path.join(a.out, "resnet50_fp16.onnx")
    if not os.path.exists(fp16):
        model = onnx.load(fp32)
        for t in model.graph.initializer:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
        for v in list(model.graph.input) + list(model.graph.output):
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
        onnx.checker.check_model(model)
        onnx.save(model, fp16)
    print(fp16, flush=True)
    if not os.path.exists(qdq):
        quantize_qdq(fp32, qdq, calib, "input")
    print(qdq, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
