"""Isolated sessions (SessionOptions.isolate): each run in a child process
(vigil-worker), so that a crash becomes vigil.CrashedError and this process
lives on. The crash comes from the test-only op ai.vigil.testing.Crash, which
vigil knows only with VIGIL_ENABLE_TEST_OPS=1 (inherited by the child)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import vigil
from conftest import TINY

MOBILENET = str(TINY / "mobilenet_v2" / "model.onnx")


@pytest.fixture
def test_ops(monkeypatch):
    monkeypatch.setenv("VIGIL_ENABLE_TEST_OPS", "1")


def faulty_model(tmp_path, op):
    """x[1,4] -> Relu 'first' -> ai.vigil.testing <op> 'faulty' -> Neg 'last' -> y"""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="first"),
         helper.make_node(op, ["a"], ["b"], name="faulty", domain="ai.vigil.testing"),
         helper.make_node("Neg", ["b"], ["y"], name="last")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.vigil.testing", 1)])
    model.ir_version = 8
    path = tmp_path / f"{op}.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def isolated(**kw):
    return vigil.SessionOptions(isolate=True, **kw)


X = np.array([[1.0, -2.0, 3.0, -4.0]], np.float32)


def test_the_test_op_really_kills_a_process_without_isolation(tmp_path, test_ops):
    model = faulty_model(tmp_path, "Crash")
    code = ("import numpy as np, vigil; s = vigil.InferenceSession(%r); "
            "s.run(None, {'x': np.ones([1, 4], np.float32)})" % model)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ), timeout=120)
    assert done.returncode < 0, done.stderr.decode(errors="replace")  # killed by a signal


def test_a_crash_is_an_error_and_this_process_lives_on(tmp_path, test_ops):
    session = vigil.InferenceSession(faulty_model(tmp_path, "Crash"), sess_options=isolated())
    with pytest.raises(vigil.CrashedError) as info:
        session.run(None, {"x": X})
    first_line = str(info.value).splitlines()[0]
    assert "SIGSEGV" in first_line or "crashed" in first_line.lower(), str(info.value)
    facts = {f["name"]: f["value"] for f in info.value.diagnosis["facts"]}
    assert "Crash 'faulty'" in facts["node"]
    # The same session runs again (a new child each run), and another works.
    with pytest.raises(vigil.CrashedError):
        session.run(None, {"x": X})
    clean = vigil.InferenceSession(faulty_model(tmp_path, "Diverge"), sess_options=isolated())
    assert clean.run(None, {"x": X})[0].shape == (1, 4)


def test_a_hang_is_killed_after_the_timeout(tmp_path, test_ops):
    session = vigil.InferenceSession(faulty_model(tmp_path, "Hang"), sess_options=isolated(isolate_timeout_s=1.0))
    with pytest.raises(vigil.CrashedError, match="hung"):
        session.run(None, {"x": X})


def test_isolated_outputs_equal_in_process_outputs():
    x = np.random.default_rng(5).standard_normal([1, 3, 96, 96]).astype(np.float32)
    here = vigil.InferenceSession(MOBILENET).run(None, {"input_0": x})[0]
    apart = vigil.InferenceSession(MOBILENET, sess_options=isolated())
    assert apart.get_providers() == ["CPUExecutionProvider"]
    assert [i.name for i in apart.get_inputs()] == ["input_0"]
    np.testing.assert_array_equal(apart.run(None, {"input_0": x})[0], here)
    with open(MOBILENET, "rb") as f:
        from_bytes = vigil.InferenceSession(f.read(), sess_options=isolated())
    np.testing.assert_array_equal(from_bytes.run(None, {"input_0": x})[0], here)


def test_bad_inputs_are_caught_before_any_child_starts():
    session = vigil.InferenceSession(MOBILENET, sess_options=isolated())
    with pytest.raises(vigil.InvalidInputError, match="int32"):
        session.run(None, {"input_0": np.zeros([1, 3, 96, 96], np.int32)})


def test_what_needs_the_session_in_this_process_is_refused_clearly():
    session = vigil.InferenceSession(MOBILENET, sess_options=isolated())
    with pytest.raises(vigil.UnsupportedError, match="isolated session"):
        session.io_binding()
    x = {"input_0": np.zeros([1, 3, 96, 96], np.float32)}
    with pytest.raises(vigil.UnsupportedError, match="isolated session"):
        session.profile(x, runs=1)
    assert session.check(x) == {}  # checking inputs needs no child
