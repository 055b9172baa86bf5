"""Helpers shared by the com.microsoft QLinear* scripts: build a one-node
model with onnx.helper and run it in onnxruntime's CPU execution provider."""
import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

MS = "com.microsoft"


def make_model(op, inputs, attrs, out_dtype, out_name="y", constants=()):
    """inputs: list of numpy arrays or None (an omitted optional input).
    Returns (model, feeds): every present input is a graph input, except the
    indices in `constants`, which become initializers."""
    names, infos, feeds, inits = [], [], {}, []
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        n = f"in{i}"
        names.append(n)
        if i in constants:
            inits.append(onnx.numpy_helper.from_array(a, n))
            continue
        infos.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)))
        feeds[n] = a
    node = helper.make_node(op, names, [out_name], domain=MS, **(attrs or {}))
    out = helper.make_tensor_value_info(out_name, helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype)), None)
    graph = helper.make_graph([node], op.lower(), infos, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model, feeds


def run_ort(model, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def rne_exact(v):
    """Round half to even of float64 values."""
    return np.rint(v)
