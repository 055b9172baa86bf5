"""Shared fixtures of the Python package's tests: the repository's models and
small models written with the onnx package."""

import json
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("VIGIL_TEST_MODELS", ROOT / "tests" / "models"))
TINY = MODELS / "tiny"


def tiny_models():
    with open(TINY / "models.json") as f:
        return json.load(f)


def tiny_inputs(entry):
    """{input name: array} from the model's input_*.npy files."""
    return {i["name"]: np.load(TINY / entry["name"] / i["file"]) for i in entry["inputs"]}


def relative_l2(got, want):
    """||got - want|| / ||want|| in float64; NaN anywhere never passes."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if np.isnan(got).any() or np.isnan(want).any():
        return float("inf")
    denominator = np.linalg.norm(want.ravel())
    numerator = np.linalg.norm((got - want).ravel())
    return float(numerator / denominator) if denominator > 0 else float(numerator)


@pytest.fixture
def relu_model(tmp_path):
    """A one-node model: Relu over float32 'image' of the given shape."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    def make(shape=(1, 3, 224, 224), name="relu.onnx"):
        graph = helper.make_graph(
            [helper.make_node("Relu", ["image"], ["out"], name="relu")], "relu",
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(shape))],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, list(shape))])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = tmp_path / name
        onnx.save(model, str(path))
        return path

    return make
