"""The model repository the tests serve, written into a temporary folder:
tests/models/tiny as they are (configs with only `backend: "vigil"`, filled
in by the backend), versions of unet and mobilenet_v2 with a symbolic batch
dim, two small models written with the onnx package, and the models that
must fail to load."""

import json
import os
import pathlib
import shutil

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("VIGIL_TEST_MODELS", ROOT / "tests" / "models"))
TINY = MODELS / "tiny"


def tiny_entries():
    with open(TINY / "models.json") as f:
        return json.load(f)


def tiny_inputs(name):
    entry = next(e for e in tiny_entries() if e["name"] == name)
    return {i["name"]: np.load(TINY / name / i["file"]) for i in entry["inputs"]}


TINY_NAMES = [e["name"] for e in tiny_entries()]

# Served at start; the others must fail to load (tests/triton/test_errors.py).
LOADABLE = TINY_NAMES + ["mobilenet_auto", "unet_batch", "unet_ragged", "unet_wild", "pair", "pair_single", "mlp"]
FAILING = ["bad_truncated", "bad_op", "bad_param", "bad_value", "bad_missing", "bad_dtype", "bad_batch"]

MLP_WIDTH, MLP_OUT = 64, 16

# Wildcard dims and ragged batches let requests of any shape reach the
# backend, which then checks them against the model with vigil_session_check.
UNET_WILDCARD = """
input [ { name: "input_0" data_type: TYPE_FP32 dims: [ -1, -1, -1 ] %s } ]
output [ { name: "115" data_type: TYPE_FP32 dims: [ -1, -1, -1 ] } ]
"""


def with_batch_dim(src, dst):
    """The model with dim 0 of every input and output symbolic ("N")."""
    import onnx
    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    onnx.save(m, str(dst))


def write_pair(dst):
    """out = a + b, a and b float32[N,S]: two inputs sharing symbolic dims."""
    import onnx
    from onnx import TensorProto, helper
    shape = ["N", "S"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["out"], name="add")], "pair",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(dst))


def write_mlp(dst):
    """y = relu(x @ W1) @ W2, x float32[N,64], y float32[N,16]; seeded weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w1 = (rng.standard_normal((MLP_WIDTH, MLP_WIDTH)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((MLP_WIDTH, MLP_OUT)) / 8).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", MLP_WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", MLP_OUT])],
        initializer=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(dst))


def write_unknown_op(dst):
    """A valid model whose op vigil does not have: it reads and describes,
    so the session's creation (ModelInstanceInitialize) is what fails."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")], "unknown_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(dst))


def model_file(repo, name):
    return pathlib.Path(repo) / name / "1" / "model.onnx"


def build(repo, kind, instances):
    repo = pathlib.Path(repo)
    group = f"instance_group [ {{ kind: KIND_{kind} count: {instances} }} ]\n" if kind == "GPU" else ""

    def add(name, config, source=None, writer=None, group_line=group):
        folder = repo / name / "1"
        folder.mkdir(parents=True)
        if source is not None:
            shutil.copyfile(source, folder / "model.onnx")
        if writer is not None:
            writer(folder / "model.onnx")
        (repo / name / "config.pbtxt").write_text('backend: "vigil"\n' + config + group_line)

    for name in TINY_NAMES:
        add(name, "", TINY / name / "model.onnx")
    add("mobilenet_auto", "", writer=lambda p: with_batch_dim(TINY / "mobilenet_v2" / "model.onnx", p))
    add("unet_batch", "max_batch_size: 8\n"
        "dynamic_batching { max_queue_delay_microseconds: 300000 preferred_batch_size: [ 8 ] }\n",
        writer=lambda p: with_batch_dim(TINY / "unet" / "model.onnx", p))
    add("unet_ragged", "max_batch_size: 8\n" + UNET_WILDCARD % "allow_ragged_batch: true" +
        "dynamic_batching { max_queue_delay_microseconds: 1000000 }\n",
        writer=lambda p: with_batch_dim(TINY / "unet" / "model.onnx", p))
    add("unet_wild", "max_batch_size: 8\n" + UNET_WILDCARD % "",
        writer=lambda p: with_batch_dim(TINY / "unet" / "model.onnx", p))
    add("pair", "max_batch_size: 8\n"
        'input [ { name: "a" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true },\n'
        '        { name: "b" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]\n'
        'output [ { name: "out" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        "dynamic_batching { max_queue_delay_microseconds: 1000000 }\n",
        writer=write_pair)
    # The same without dynamic batching: each request runs at once (errors, soak).
    add("pair_single", "max_batch_size: 8\n"
        'input [ { name: "a" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "b" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "out" data_type: TYPE_FP32 dims: [ -1 ] } ]\n', writer=write_pair)
    mlp_group = group if kind == "GPU" else "instance_group [ { kind: KIND_CPU count: 2 } ]\n"
    add("mlp", "max_batch_size: 16\nparameters { key: \"intra_op_num_threads\" value: { string_value: \"1\" } }\n"
        "dynamic_batching { max_queue_delay_microseconds: 2000 }\n", writer=write_mlp, group_line=mlp_group)

    unet = TINY / "unet" / "model.onnx"
    add("bad_truncated", "", writer=lambda p: p.write_bytes(unet.read_bytes()[:3000]))
    add("bad_op", "", writer=write_unknown_op)
    add("bad_param", 'parameters { key: "no_fallbak" value: { string_value: "true" } }\n', unet)
    add("bad_value", 'parameters { key: "layout" value: { string_value: "nhwc" } }\n', unet)
    add("bad_missing", "")
    add("bad_dtype", 'input [ { name: "input_0" data_type: TYPE_FP16 dims: [ 1, 3, 64, 64 ] } ]\n', unet)
    add("bad_batch", "max_batch_size: 4\n", unet)
