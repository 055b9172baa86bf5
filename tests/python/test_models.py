"""Every tiny model through vigil's CPU provider matches onnxruntime's CPU
outputs, and the models' inputs and outputs read the same in both."""

import numpy as np
import onnxruntime as ort
import pytest

import vigil
from conftest import MODELS, ROOT, TINY, relative_l2, tiny_inputs, tiny_models

CPU_TOLERANCE = 1e-4  # relative L2, float64
MODELS_TINY = tiny_models()
IO_MODELS = [TINY / m["name"] / "model.onnx" for m in MODELS_TINY] + [
    MODELS / "vit_tiny" / "vit_tiny_fp16.onnx", MODELS / "vit_tiny" / "vit_tiny_fp32.onnx",
    ROOT / "examples" / "tiny_cnn.onnx"]


@pytest.fixture(scope="module")
def ort_sessions():
    cache = {}

    def get(path, optimize=True):
        if (path, optimize) not in cache:
            options = ort.SessionOptions()
            if not optimize:
                # onnxruntime's CPU graph optimizer crashes on vit_tiny_fp16 on
                # CPUs without AVX-512 (seen with 1.23 and 1.30); the model's
                # interface needs no optimizer.
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            cache[path, optimize] = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return cache[path, optimize]

    return get


@pytest.mark.parametrize("entry", MODELS_TINY, ids=[m["name"] for m in MODELS_TINY])
def test_matches_onnxruntime_cpu(entry, ort_sessions):
    path = TINY / entry["name"] / "model.onnx"
    feed = tiny_inputs(entry)
    want = ort_sessions(path).run(None, feed)
    session = vigil.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]
    got = session.run(None, feed)
    assert len(got) == len(want)
    for g, w, info in zip(got, want, session.get_outputs()):
        assert isinstance(g, np.ndarray)
        assert g.dtype == w.dtype, info.name
        assert g.shape == w.shape, info.name
        error = relative_l2(g, w)
        assert error <= CPU_TOLERANCE, f"{entry['name']} output {info.name}: relative L2 error {error:.3g}"


@pytest.mark.parametrize("entry", MODELS_TINY[:2], ids=[m["name"] for m in MODELS_TINY[:2]])
def test_output_names_select_outputs(entry):
    path = TINY / entry["name"] / "model.onnx"
    session = vigil.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = tiny_inputs(entry)
    everything = session.run(None, feed)
    last = session.get_outputs()[-1].name
    (only,) = session.run([last], feed)
    np.testing.assert_array_equal(only, everything[-1])


@pytest.mark.parametrize("path", IO_MODELS, ids=[p.parent.name + "/" + p.name for p in IO_MODELS])
def test_inputs_and_outputs_agree_with_onnxruntime(path, ort_sessions):
    want = ort_sessions(path, optimize=False)
    session = vigil.InferenceSession(path)
    for got, ref in ((session.get_inputs(), want.get_inputs()), (session.get_outputs(), want.get_outputs())):
        assert [a.name for a in got] == [a.name for a in ref]
        assert [a.type for a in got] == [a.type for a in ref]
        assert [a.shape for a in got] == [a.shape for a in ref]


def test_symbolic_dims_are_strings():
    session = vigil.InferenceSession(ROOT / "examples" / "tiny_cnn.onnx")
    (image,) = session.get_inputs()
    assert image.shape == ["N", 3, 32, 32]
    assert image.type == "tensor(float)"
    assert session.check({"image": np.zeros([5, 3, 32, 32], np.float32)}) == {"N": 5}


def test_float16_model_types():
    session = vigil.InferenceSession(MODELS / "vit_tiny" / "vit_tiny_fp16.onnx")
    assert session.get_inputs()[0].type == "tensor(float16)"


def test_session_from_bytes():
    entry = MODELS_TINY[0]
    path = TINY / entry["name"] / "model.onnx"
    feed = tiny_inputs(entry)
    from_path = vigil.InferenceSession(path).run(None, feed)
    from_bytes = vigil.InferenceSession(path.read_bytes()).run(None, feed)
    for a, b in zip(from_path, from_bytes):
        np.testing.assert_array_equal(a, b)


def test_inputs_are_read_in_place_and_outputs_own_their_memory():
    entry = MODELS_TINY[0]
    session = vigil.InferenceSession(TINY / entry["name"] / "model.onnx")
    feed = tiny_inputs(entry)
    (out,) = session.run(None, feed)[:1]
    # The array wraps vigil's output buffer: not a copy of another numpy array.
    assert out.flags.c_contiguous and out.flags.writeable
    assert not isinstance(out.base, np.ndarray)
    # A non-contiguous input is made contiguous and gives the same result.
    name, x = next(iter(feed.items()))
    strided = np.asfortranarray(x)
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(session.run(None, {name: strided})[0], out)


def test_doctor_returns_a_dict():
    report = vigil.doctor()
    assert isinstance(report, dict) and report
