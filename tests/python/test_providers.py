"""Execution providers: no silent CPU fallback (ONNX Runtime issue #23372)."""

import warnings

import numpy as np
import pytest

import vigil
from conftest import TINY, relative_l2, tiny_inputs, tiny_models

MOBILENET = TINY / "mobilenet_v2" / "model.onnx"


def cuda_runs_here():
    try:
        vigil.InferenceSession(MOBILENET, providers=["CUDAExecutionProvider"])
        return True
    except vigil.VigilError:
        return False


CUDA = cuda_runs_here()
no_cuda_only = pytest.mark.skipif(CUDA, reason="CUDA runs on this machine")


def test_default_is_cpu():
    assert vigil.InferenceSession(MOBILENET).get_providers() == ["CPUExecutionProvider"]


@no_cuda_only
def test_cuda_alone_raises_with_diagnosis():
    with pytest.raises(vigil.VigilError) as info:
        vigil.InferenceSession(MOBILENET, providers=["CUDAExecutionProvider"])
    error = info.value
    assert error.headline and str(error).splitlines()[0] == error.headline
    assert error.diagnosis["causes"] or error.diagnosis["fixes"], error.diagnosis


@no_cuda_only
def test_cuda_then_cpu_warns_and_runs_on_cpu():
    with pytest.warns(RuntimeWarning, match="CUDAExecutionProvider") as record:
        session = vigil.InferenceSession(MOBILENET, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert isinstance(session.provider_fallback, vigil.VigilError)
    assert session.provider_fallback.summary in str(record[0].message)
    out = session.run(None, {"input_0": np.zeros([1, 3, 96, 96], np.float32)})
    assert out[0].shape == (1, 1000)


def test_cpu_only_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vigil.InferenceSession(MOBILENET, providers=["CPUExecutionProvider"])


def test_provider_tuples_and_options():
    session = vigil.InferenceSession(MOBILENET, providers=[("CPUExecutionProvider", {})])
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_unknown_provider_option_key_raises():
    with pytest.raises(ValueError) as info:
        vigil.InferenceSession(MOBILENET, providers=[("CUDAExecutionProvider", {"arena_extend_strategy": 1}),
                                                     "CPUExecutionProvider"])
    message = str(info.value)
    assert "arena_extend_strategy" in message
    for key in ("device_id", "gpu_mem_limit", "enable_cuda_graph", "use_tf32", "prefer_nhwc",
                "cudnn_conv_algo_search"):
        assert key in message


def test_bad_provider_option_value_raises():
    with pytest.raises(ValueError, match="cudnn_conv_algo_search"):
        vigil.InferenceSession(MOBILENET, providers=[("CUDAExecutionProvider", {"cudnn_conv_algo_search": "FAST"}),
                                                     "CPUExecutionProvider"])


def test_unknown_provider_raises():
    with pytest.raises(ValueError, match="TensorrtExecutionProvider"):
        vigil.InferenceSession(MOBILENET, providers=["TensorrtExecutionProvider"])


def test_provider_options_map_to_session_options():
    from vigil._options import parse_providers, vigil_options

    providers = parse_providers([("CUDAExecutionProvider", {"device_id": "1", "gpu_mem_limit": 2 << 30,
                                                            "enable_cuda_graph": "1", "use_tf32": 0,
                                                            "prefer_nhwc": "0",
                                                            "cudnn_conv_algo_search": "EXHAUSTIVE"}),
                                 "CPUExecutionProvider"])
    options = vigil_options(vigil.SessionOptions(), providers)
    assert options["backends"] == [1, 0]
    assert options["device_id"] == 1
    assert options["gpu_mem_limit"] == 2 << 30
    assert options["cuda_graphs"] is True
    assert options["allow_tf32"] is False
    assert options["layout"] == 1  # VIGIL_LAYOUT_NCHW
    assert options["tune"] is True
    heuristic = vigil_options(None, parse_providers([("CUDAExecutionProvider",
                                                      {"cudnn_conv_algo_search": "HEURISTIC"})]))
    assert heuristic["tune"] is False and heuristic["layout"] == 0
    # onnxruntime's HEURISTIC measures nothing: neither do vigil's first runs.
    assert heuristic["measure_first_run"] is False
    assert options["measure_first_run"] is True
    assert vigil_options(None, parse_providers(["CUDAExecutionProvider"]))["measure_first_run"] is True


def test_session_options_are_typed():
    options = vigil.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.graph_optimization_level = vigil.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert options.to_vigil()["constant_folding"] is False
    with pytest.raises(TypeError):
        options.enable_profiling = "sometimes"
    with pytest.raises(AttributeError, match="no option 'enable_warp_drive'"):
        options.enable_warp_drive = True
    session = vigil.InferenceSession(MOBILENET, sess_options=options, providers=["CPUExecutionProvider"])
    assert session.get_session_options() is options
    assert session.run(None, {"input_0": np.zeros([1, 3, 96, 96], np.float32)})[0].shape == (1, 1000)


def test_negative_thread_count_is_refused_where_it_is_set():
    with pytest.raises(ValueError, match="intra_op_num_threads must be at least 0, got -1"):
        vigil.SessionOptions(intra_op_num_threads=-1)


def test_thread_count_is_passed_and_runs():
    x = np.random.default_rng(3).standard_normal([1, 3, 96, 96]).astype(np.float32)
    one = vigil.InferenceSession(MOBILENET, sess_options=vigil.SessionOptions(intra_op_num_threads=1))
    four = vigil.InferenceSession(MOBILENET, sess_options=vigil.SessionOptions(intra_op_num_threads=4))
    a, b = one.run(None, {"input_0": x})[0], four.run(None, {"input_0": x})[0]
    assert relative_l2(a, b) < 1e-5


def test_allow_tf32x3_is_on_unless_turned_off():
    assert vigil.SessionOptions().to_vigil()["allow_tf32x3"] is True
    assert vigil.SessionOptions(allow_tf32x3=False).to_vigil()["allow_tf32x3"] is False
    with pytest.raises(TypeError):
        vigil.SessionOptions(allow_tf32x3="yes please")


def test_measure_first_run_is_on_unless_turned_off():
    assert vigil.SessionOptions().to_vigil()["measure_first_run"] is True
    options = vigil.SessionOptions(measure_first_run=False)
    assert options.to_vigil()["measure_first_run"] is False
    with pytest.raises(TypeError):
        vigil.SessionOptions(measure_first_run="no thanks")
    # The key reaches the library (an unknown one is a KeyError there), and a
    # CPU session runs as before: the option is the CUDA backend's.
    x = np.random.default_rng(5).standard_normal([1, 3, 96, 96]).astype(np.float32)
    off = vigil.InferenceSession(MOBILENET, sess_options=options).run(None, {"input_0": x})[0]
    on = vigil.InferenceSession(MOBILENET).run(None, {"input_0": x})[0]
    np.testing.assert_array_equal(off, on)


def test_tf32x3_convolutions_are_off_unless_turned_on():
    assert vigil.SessionOptions().to_vigil()["tf32x3_convolutions"] is False
    options = vigil.SessionOptions(tf32x3_convolutions=True)
    assert options.to_vigil()["tf32x3_convolutions"] is True
    with pytest.raises(TypeError):
        vigil.SessionOptions(tf32x3_convolutions="maybe")
    # The key reaches the library, and a CPU session runs as before.
    x = np.random.default_rng(6).standard_normal([1, 3, 96, 96]).astype(np.float32)
    on = vigil.InferenceSession(MOBILENET, sess_options=options).run(None, {"input_0": x})[0]
    off = vigil.InferenceSession(MOBILENET).run(None, {"input_0": x})[0]
    np.testing.assert_array_equal(on, off)


def test_run_as_float16_computes_a_float32_model_in_float16():
    # The tiny UNet (random weights) keeps its activations within float16's
    # range; its outputs stay float32, near the exact run's but not equal.
    unet = TINY / "unet" / "model.onnx"
    entry = next(e for e in tiny_models() if e["name"] == "unet")
    feeds = tiny_inputs(entry)
    exact = vigil.InferenceSession(unet).run(None, feeds)[0]
    options = vigil.SessionOptions(run_as_float16=True)
    assert options.to_vigil()["run_as_float16"] is True
    half = vigil.InferenceSession(unet, sess_options=options).run(None, feeds)[0]
    assert half.dtype == np.float32 and half.shape == exact.shape
    error = relative_l2(half, exact)
    assert 0 < error < 1e-2, error
