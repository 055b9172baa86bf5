#!/usr/bin/env python3
"""Models with one test-only fault-injection node (domain ai.vigil.testing;
vigil knows these ops only with VIGIL_ENABLE_TEST_OPS=1), for the crash guard
(`vigil run --isolate`), `vigil reduce` and `vigil compare --repeat` on a GPU.

  make_fault_models.py OUT_DIR

writes, each with an input file x.npy (float32 [1,8,16,16]):
  oob_small.onnx     Conv, Relu, OutOfBoundsWrite, Conv, Relu: a device fault
  oob_chain.onnx     122 nodes (Conv/Relu/Mul/Add blocks) with OutOfBoundsWrite
                     at node 68: for `vigil reduce`
  crash_chain.onnx   the same chain with Crash at node 68 (a CPU SIGSEGV)
  diverge.onnx       Conv, Relu, Diverge, Conv: the GPU disagrees with the CPU
Needs numpy and onnx (not onnxruntime)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C = 8
SHAPE = [1, C, 16, 16]


class Chain:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.last = "x"
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def add(self, op, inputs, domain="", **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        self.last = out
        return out

    def weight(self, shape, scale):
        n = self.name("w")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def conv(self):
        return self.add("Conv", [self.last, self.weight([C, C, 3, 3], 0.15), self.weight([C], 0.1)], pads=[1, 1, 1, 1])

    def block(self):
        """Conv, Relu, Mul by a constant, Add the block's input: 4 nodes."""
        start = self.last
        self.conv()
        self.add("Relu", [self.last])
        self.add("Mul", [self.last, self.weight([1], 0.5)])
        self.add("Add", [self.last, start])

    def fault(self, op):
        self.add(op, [self.last], domain="ai.vigil.testing")

    def save(self, path):
        graph = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                                  [helper.make_tensor_value_info(self.last, TensorProto.FLOAT, SHAPE)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("ai.vigil.testing", 1)])
        model.ir_version = 8
        onnx.save(model, path)
        return len(self.nodes)


def chain(fault_op, path, blocks=30, at_block=17, seed=0):
    c = Chain(seed)
    for b in range(blocks):
        if b == at_block:
            c.fault(fault_op)
            fault_index = len(c.nodes) - 1
        c.block()
    c.conv()
    n = c.save(path)
    return n, fault_index


def small(fault_op, path, seed=1):
    c = Chain(seed)
    c.conv()
    c.add("Relu", [c.last])
    c.fault(fault_op)
    c.conv()
    c.add("Relu", [c.last])
    return c.save(path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "x.npy"), np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32))
    print("oob_small:", small("OutOfBoundsWrite", os.path.join(out, "oob_small.onnx")), "nodes")
    print("diverge:", small("Diverge", os.path.join(out, "diverge.onnx")), "nodes")
    for op, name in (("OutOfBoundsWrite", "oob_chain"), ("Crash", "crash_chain")):
        n, at = chain(op, os.path.join(out, name + ".onnx"))
        print(f"{name}: {n} nodes, {op} is node {at}")


if __name__ == "__main__":
    main()
