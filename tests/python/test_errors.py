"""Failures raise vigil.VigilError subclasses whose message starts with the
summary and whose .diagnosis holds the whole diagnosis (seeds 000 and 003)."""

import numpy as np
import pytest

import vigil
from conftest import TINY

MOBILENET = TINY / "mobilenet_v2" / "model.onnx"


def test_seed_000_int32_for_float32_input():
    session = vigil.InferenceSession(MOBILENET, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    x = np.ones([1, 3, 96, 96], dtype=np.int32)
    with pytest.raises(vigil.InvalidInputError) as info:
        session.run(None, {name: x})
    error = info.value
    first_line = str(error).splitlines()[0]
    # The first line is the cause and its fix (the headline); the symptom follows.
    assert first_line == error.headline
    assert f"'{name}'" in first_line
    assert "int32" in first_line and "float32" in first_line
    assert " — fix: " in first_line
    assert not first_line.startswith("error [")
    assert error.summary in str(error)
    assert error.diagnosis["headline"] == error.headline
    assert isinstance(error, vigil.VigilError) and isinstance(error, ValueError)
    assert error.code == "InvalidInput"
    assert error.diagnosis["code"] == "InvalidInput"
    assert error.diagnosis["summary"] == error.summary
    assert error.diagnosis["fixes"], "a dtype mismatch comes with a fix"
    assert len(str(error).splitlines()) > 1, "the symptom and the facts follow the headline"


def test_seed_003_channels_times_total_buffer(relu_model):
    """ONNX Runtime issue 24339: 3*640*480 floats given for [1,3,224,224]."""
    session = vigil.InferenceSession(relu_model((1, 3, 224, 224)))
    frame = np.zeros(3 * 640 * 480, dtype=np.float32)
    binding = session.io_binding()
    with pytest.raises(vigil.InvalidInputError) as info:
        binding.bind_input("image", "cpu", 0, np.float32, [1, 3, 224, 224], frame)
        session.run_with_iobinding(binding)
    error = info.value
    assert "'image'" in error.summary
    facts = error.facts
    assert any("921600" in v for v in facts.values()), facts
    assert "channels*height*width" in error.causes[0], error.diagnosis
    evidence = error.diagnosis["causes"][0]["evidence"]
    assert "640" in evidence and "480" in evidence, error.diagnosis


def test_seed_003_as_run_input(relu_model):
    session = vigil.InferenceSession(relu_model((1, 3, 224, 224)))
    frame = np.zeros([480, 640, 3], dtype=np.float32)
    with pytest.raises(vigil.InvalidInputError) as info:
        session.run(None, {"image": frame})
    error = info.value
    assert "'image'" in error.summary
    assert "[480,640,3]" in error.facts.get("got", ""), error.diagnosis


def test_unknown_input_name():
    session = vigil.InferenceSession(MOBILENET)
    with pytest.raises(vigil.InvalidInputError) as info:
        session.run(None, {"nope": np.zeros([1, 3, 96, 96], np.float32)})
    assert "nope" in str(info.value)


def test_invalid_model_bytes():
    with pytest.raises(vigil.InvalidModelError) as info:
        vigil.InferenceSession(b"this is not an onnx model")
    assert info.value.diagnosis["code"] == "InvalidModel"


def test_missing_model_file(tmp_path):
    with pytest.raises(vigil.VigilError) as info:
        vigil.InferenceSession(tmp_path / "missing.onnx")
    assert "missing.onnx" in str(info.value)


def test_check_validates_without_running():
    session = vigil.InferenceSession(MOBILENET)
    with pytest.raises(vigil.InvalidInputError):
        session.check({"input_0": np.zeros([1, 96, 96, 3], np.float32)})
    assert session.check({"input_0": np.zeros([1, 3, 96, 96], np.float32)}) == {}


def test_error_classes_do_not_shadow_builtins():
    assert vigil.VigilEnvironmentError is not EnvironmentError
    assert issubclass(vigil.VigilEnvironmentError, vigil.VigilError)
    for name in ("InvalidModelError", "InvalidInputError", "UnsupportedError", "OutOfMemoryError",
                 "DeviceFaultError", "CrashedError", "InternalError"):
        assert issubclass(getattr(vigil, name), vigil.VigilError)
