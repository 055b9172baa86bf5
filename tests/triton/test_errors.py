"""Bad requests and models that cannot load: vigil's diagnosis reaches the
client and the model's status, and the server stays up.

Where a bad request is caught: Triton's core checks every request against
the model's config before any backend sees it (inference input count and
names, datatype, shape against the config's dims, byte size; core r24.10
src/infer_request.cc, InferenceRequest::Normalize). So against a config with
the model's exact dims (what the backend fills in), Triton itself rejects a
wrong dtype, shape, byte size, a missing or an unknown input, with its own
message. What passes those checks reaches the backend, which checks the
request against the model with vigil (vigil_session_check): shapes where the
config has wildcard dims, symbolic dims bound inconsistently across inputs.
Those errors are vigil's diagnosis, its headline (the cause and its fix)
first, then the symptom, the other causes and fixes.
"""

import numpy as np
import pytest

import repository
from conftest import assert_same, diagnosis_parts, vigil_diagnosis, vigil_run


def vigil_lines(text):
    """The lines of vigil's own diagnosis that must reach the client: all but
    the 'source:' fact, which names the Python caller's array."""
    return [line for line in text.splitlines() if not line.strip().startswith("source:")]


def assert_vigil_diagnosis(error, want_text):
    lines = error.splitlines()
    want = vigil_lines(want_text)
    assert lines[0] == want[0], "the first line is vigil's headline"
    it = iter(lines)
    missing = [line for line in want if not any(line == got for got in it)]
    assert not missing, f"vigil's lines missing from the error (in order): {missing}\nerror:\n{error}"
    summary, fixes = diagnosis_parts(error)
    assert fixes, "the error carries vigil's fixes"


def good_unet(client, server, model="unet_wild"):
    """The server still serves, and right."""
    x = repository.tiny_inputs("unet")["input_0"]
    reply = client.infer(model, {"input_0": x})
    assert reply.ok, reply.error
    assert_same(reply.outputs["115"], vigil_run(repository.model_file(server.repo, model), {"input_0": x})["115"],
                model)
    assert server.alive()
    assert client.request("GET", "/v2/health/live")[0] == 200


VIGIL_CHECKED = {
    # unet_wild's config has dims [-1,-1,-1]: the backend checks the shape against the model's [N,3,64,64].
    "wrong width": ("unet_wild", lambda: {"input_0": np.zeros((1, 3, 64, 32), np.float32)}),
    "NHWC image": ("unet_wild", lambda: {"input_0": np.zeros((1, 64, 64, 3), np.float32)}),
    "grey image": ("unet_wild", lambda: {"input_0": np.zeros((2, 1, 64, 64), np.float32)}),
    # pair: a and b share the symbolic dim S; Triton's config can only say -1.
    "S bound twice": ("pair_single", lambda: {"a": np.ones((1, 4), np.float32), "b": np.ones((1, 5), np.float32)}),
}


@pytest.mark.parametrize("case", sorted(VIGIL_CHECKED))
def test_bad_request_gets_vigils_diagnosis(server, client, case):
    model, make = VIGIL_CHECKED[case]
    inputs = make()
    reply = client.infer(model, inputs, request_id=f"bad-{case}")
    assert reply.status == 400, reply
    assert_vigil_diagnosis(reply.error, vigil_diagnosis(repository.model_file(server.repo, model), inputs))
    assert f"request: 'bad-{case}'" in reply.error
    assert f"triton model: {model} version 1" in reply.error
    good_unet(client, server)


def raw(name, datatype, shape, data):
    return {"name": name, "datatype": datatype, "shape": shape, "data": data}


X = np.zeros((1, 3, 64, 64), np.float32)
TRITON_CHECKED = {
    "wrong dtype": ("unet", [raw("input_0", "INT32", [1, 3, 64, 64], X.astype(np.int32))], ["input_0", "INT32", "FP32"]),
    "wrong shape": ("unet", [raw("input_0", "FP32", [1, 3, 64, 32], X[..., :32])], ["input_0", "[1,3,64,32]"]),
    "wrong byte size": ("unet", [raw("input_0", "FP32", [1, 3, 64, 64], X.tobytes()[:1000])], ["input_0"]),
    "missing input": ("pair_single", [raw("a", "FP32", [1, 4], np.ones((1, 4), np.float32))], ["'b'"]),
    "unknown input": ("unet", [raw("input_0", "FP32", [1, 3, 64, 64], X), raw("image", "FP32", [1], b"\0" * 4)],
                      ["image"]),
}


@pytest.mark.parametrize("case", sorted(TRITON_CHECKED))
def test_bad_request_triton_rejects_leaves_server_serving(server, client, case):
    model, inputs, named = TRITON_CHECKED[case]
    reply = client.infer(model, inputs, request_id=f"bad-{case}")
    assert reply.status == 400, reply
    for word in named:
        assert word in reply.error, f"{word!r} not in {reply.error!r}"
    good_unet(client, server, "unet")


EXPECTED_LOAD_ERRORS = {
    "bad_param": ["model 'bad_param' version 1: unknown parameter 'no_fallbak' in config.pbtxt",
                  "did you mean 'no_fallback'?", "accepted: "],
    "bad_value": ["model 'bad_value' version 1: parameter 'layout' is 'nhwc'; it takes auto or nchw"],
    "bad_missing": ["model 'bad_missing' version 1: no model file at", "bad_missing/1/model.onnx"],
    "bad_dtype": ["model 'bad_dtype' version 1: input 'input_0' of config.pbtxt has data_type TYPE_FP16, "
                  "the model's is float32[1,3,64,64]"],
    "bad_batch": ["model 'bad_batch' version 1: max_batch_size is 4, but the model cannot take a batch along dim 0"],
}
# Every key the docs promise (docs/triton.md), listed in the unknown-key message.
PARAMETERS = ["no_fallback", "allow_tf32", "allow_tf32x3", "run_as_float16", "measure_first_run", "tf32x3_convolutions", "deterministic", "gpu_mem_limit", "cuda_graphs", "layout",
              "tuning_cache_file", "intra_op_num_threads", "isolate"]


@pytest.mark.parametrize("model", repository.FAILING)
def test_model_that_cannot_load_shows_the_diagnosis(server, client, model):
    status, error = server.load(model)
    assert status == 400 and error, (status, error)
    reason = server.index()[model]
    assert reason["state"] == "UNAVAILABLE"
    assert error in reason["reason"] or reason["reason"] in error
    if model in ("bad_truncated", "bad_op"):
        # vigil's own diagnosis of the file (ModelInitialize reads it; the
        # session, ModelInstanceInitialize, runs into the unknown op).
        import vigil
        with pytest.raises(vigil.VigilError) as info:
            vigil.InferenceSession(str(repository.model_file(server.repo, model)))
        # The reason is "<Triton's code name>: <the backend's message>".
        assert_vigil_diagnosis(reason["reason"].split(": ", 1)[1], str(info.value))
    else:
        for expected in EXPECTED_LOAD_ERRORS[model]:
            assert expected in error, f"{expected!r} not in {error!r}"
    if model == "bad_param":
        for key in PARAMETERS:
            assert key in error.split("accepted: ")[1].splitlines()[0]
    assert "fix:" in error
    good_unet(client, server, "unet")
