"""CUDA tensors through DLPack: inputs read on the device, outputs kept there.
Skipped where torch or a CUDA device, or vigil's CUDA backend, is missing."""

import numpy as np
import pytest

import vigil
from conftest import TINY, relative_l2, tiny_inputs, tiny_models

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)

ENTRY = {m["name"]: m for m in tiny_models()}["mobilenet_v2"]
PATH = TINY / ENTRY["name"] / "model.onnx"


@pytest.fixture(scope="module")
def cuda_session():
    try:
        return vigil.InferenceSession(PATH, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    except vigil.VigilError as error:
        pytest.skip(f"vigil's CUDA backend cannot run here: {error.summary}")


def _need_cuda(session):
    if "CUDAExecutionProvider" not in session.get_providers():
        pytest.skip(f"vigil fell back to the CPU: {session.provider_fallback}")


def test_run_with_torch_cuda_input_returns_numpy(cuda_session):
    _need_cuda(cuda_session)
    feed = tiny_inputs(ENTRY)
    want = vigil.InferenceSession(PATH).run(None, feed)
    device_feed = {k: torch.from_numpy(v).cuda() for k, v in feed.items()}
    got = cuda_session.run(None, device_feed)
    assert isinstance(got[0], np.ndarray)
    assert relative_l2(got[0], want[0]) <= 1e-2


def test_iobinding_device_in_device_out_no_host_copy(cuda_session):
    _need_cuda(cuda_session)
    feed = tiny_inputs(ENTRY)
    want = vigil.InferenceSession(PATH).run(None, feed)
    (name, x), = feed.items()
    x_cuda = torch.from_numpy(x).cuda()
    binding = cuda_session.io_binding()
    binding.bind_input(name, x_cuda)
    binding.bind_output(cuda_session.get_outputs()[0].name, "cuda")
    cuda_session.run_with_iobinding(binding)
    (value,) = binding.get_outputs()
    assert value.device_name() == "cuda"
    assert value.__dlpack_device__() == (2, 0)
    y = torch.from_dlpack(value)
    assert y.is_cuda and y.data_ptr() == value.data_ptr()  # the same device memory
    assert relative_l2(y.cpu().numpy(), want[0]) <= 1e-2
    assert relative_l2(value.numpy(), want[0]) <= 1e-2


def test_iobinding_onnxruntime_signature_with_device_pointer(cuda_session):
    _need_cuda(cuda_session)
    feed = tiny_inputs(ENTRY)
    (name, x), = feed.items()
    x_cuda = torch.from_numpy(x).cuda()
    out = torch.empty([1, 1000], device="cuda")
    binding = cuda_session.io_binding()
    binding.bind_input(name, "cuda", 0, np.float32, list(x.shape), x_cuda.data_ptr())
    binding.bind_output(cuda_session.get_outputs()[0].name, "cuda", 0, np.float32, [1, 1000], out.data_ptr())
    cuda_session.run_with_iobinding(binding)
    want = vigil.InferenceSession(PATH).run(None, feed)[0]
    assert relative_l2(out.cpu().numpy(), want) <= 1e-2


def test_device_input_on_cpu_session_is_diagnosed():
    session = vigil.InferenceSession(PATH, providers=["CPUExecutionProvider"])
    x = torch.zeros([1, 3, 96, 96], device="cuda")
    with pytest.raises(vigil.InvalidInputError, match="device"):
        session.run(None, {"input_0": x})
