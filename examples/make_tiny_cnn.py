#!/usr/bin/env python3
"""Writes examples/tiny_cnn.onnx: a small image classifier with random weights.

Input 'image' float32[N,3,32,32] (N symbolic), output 'probs' float32[N,10].
Conv-Relu-MaxPool, Conv-Relu-GlobalAveragePool, Flatten, Gemm, Softmax; opset 17.
Needs the onnx and numpy Python packages (only to regenerate the file).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def weight(name, *shape):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    data = rng.standard_normal(shape).astype(np.float32) / np.sqrt(fan_in)
    return numpy_helper.from_array(data, name)


initializers = [
    weight("conv1.weight", 8, 3, 3, 3), weight("conv1.bias", 8),
    weight("conv2.weight", 16, 8, 3, 3), weight("conv2.bias", 16),
    weight("fc.weight", 10, 16), weight("fc.bias", 10),
]
nodes = [
    helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
    helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "tiny_cnn",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 32, 32])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="vigil-examples", producer_version="1")
model.ir_version = 8
onnx.checker.check_model(model)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_cnn.onnx")
onnx.save(model, out)
print(f"wrote {out}")
