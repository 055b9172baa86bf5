"""IOBinding on the CPU: the same outputs as run(), onnxruntime's calls."""

import numpy as np
import pytest

import vigil
from conftest import TINY, tiny_inputs, tiny_models

ENTRIES = {m["name"]: m for m in tiny_models()}


@pytest.fixture(scope="module")
def gru():
    entry = ENTRIES["gru_regressor"]  # two outputs
    session = vigil.InferenceSession(TINY / entry["name"] / "model.onnx", providers=["CPUExecutionProvider"])
    feed = tiny_inputs(entry)
    return session, feed, session.run(None, feed)


def test_bound_numpy_inputs_give_run_outputs(gru):
    session, feed, want = gru
    binding = session.io_binding()
    for name, x in feed.items():
        binding.bind_input(name, x)
    for out in session.get_outputs():
        binding.bind_output(out.name)
    session.run_with_iobinding(binding)
    got = binding.copy_outputs_to_cpu()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    values = binding.get_outputs()
    assert [v.name for v in values] == [o.name for o in session.get_outputs()]
    assert all(v.device_name() == "cpu" for v in values)
    assert values[0].shape() == list(want[0].shape)
    assert values[0].data_type() == "tensor(float)"


def test_onnxruntime_signature_with_pointer(gru):
    session, feed, want = gru
    binding = session.io_binding()
    (name, x), = feed.items()
    binding.bind_input(name, "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_output(session.get_outputs()[0].name, "cpu")
    session.run_with_iobinding(binding)
    (got,) = binding.copy_outputs_to_cpu()
    np.testing.assert_array_equal(got, want[0])


def test_outputs_into_caller_buffers(gru):
    session, feed, want = gru
    binding = session.io_binding()
    (name, x), = feed.items()
    binding.bind_input(name, x)
    first = np.full(want[0].shape, np.nan, np.float32)
    binding.bind_output(session.get_outputs()[0].name, "cpu", 0, np.float32, list(first.shape), first)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(first, want[0])


def test_output_buffer_of_wrong_shape_is_diagnosed(gru):
    session, feed, want = gru
    binding = session.io_binding()
    (name, x), = feed.items()
    binding.bind_input(name, x)
    wrong = np.zeros([1] + list(want[0].shape), np.float32)
    binding.bind_output(session.get_outputs()[0].name, wrong)
    with pytest.raises(vigil.InvalidInputError) as info:
        session.run_with_iobinding(binding)
    assert session.get_outputs()[0].name in info.value.summary


def test_clear_binding_inputs_keeps_outputs(gru):
    session, feed, want = gru
    binding = session.io_binding()
    (name, x), = feed.items()
    binding.bind_input(name, np.zeros_like(x))
    second = session.get_outputs()[1].name
    binding.bind_output(second)
    binding.clear_binding_inputs()
    binding.bind_input(name, x)
    session.run_with_iobinding(binding)
    (got,) = binding.copy_outputs_to_cpu()
    np.testing.assert_array_equal(got, want[1])
    binding.clear_binding_outputs()
    session.run_with_iobinding(binding)
    assert len(binding.get_outputs()) == 2  # no outputs bound: all of them


def test_host_output_value_is_a_view_and_dlpack():
    entry = ENTRIES["mobilenet_v2"]
    session = vigil.InferenceSession(TINY / entry["name"] / "model.onnx")
    binding = session.io_binding()
    for name, x in tiny_inputs(entry).items():
        binding.bind_input(name, x)
    binding.bind_output(session.get_outputs()[0].name, "cpu")
    session.run_with_iobinding(binding)
    (value,) = binding.get_outputs()
    array = value.numpy()
    assert array.ctypes.data == value.data_ptr()  # no copy
    assert value.__dlpack_device__() == (1, 0)
    again = np.from_dlpack(value)
    assert again.ctypes.data == value.data_ptr()
    del value, binding
    assert np.isfinite(array).all()  # the array keeps vigil's memory alive


def test_run_with_ort_values_on_cpu():
    entry = ENTRIES["mobilenet_v2"]
    session = vigil.InferenceSession(TINY / entry["name"] / "model.onnx")
    feed = tiny_inputs(entry)
    (value,) = session.run_with_ort_values(None, feed)
    np.testing.assert_array_equal(value.numpy(), session.run(None, feed)[0])
    # An OrtValue is an input too.
    assert isinstance(value, vigil.OrtValue)


def test_cuda_output_without_cuda_session_is_diagnosed(gru):
    session, feed, want = gru
    binding = session.io_binding()
    with pytest.raises(vigil.InvalidInputError, match="device"):
        binding.bind_output(session.get_outputs()[0].name, "cuda")


def test_input_arrays_are_read_in_place():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ptr, nbytes, dtype, shape, memory, device_id, source = vigil._vigil.tensor_info(x)
    assert ptr == x.ctypes.data and nbytes == x.nbytes and dtype == 1 and shape == [3, 4] and memory == 0
