"""Outputs through Triton equal vigil's own; configs filled in from the model."""

import numpy as np
import pytest

import repository
from conftest import DEFAULT_MAX_BATCH_SIZE, assert_same, vigil_run


@pytest.mark.parametrize("name", repository.TINY_NAMES)
def test_outputs_equal_vigil(server, client, name):
    inputs = repository.tiny_inputs(name)
    reply = client.infer(name, inputs, request_id=f"tiny-{name}")
    assert reply.ok, reply.error
    want = vigil_run(repository.model_file(server.repo, name), inputs)
    assert sorted(reply.outputs) == sorted(want), "the client named no outputs: every model output comes back"
    for out, array in want.items():
        assert_same(reply.outputs[out], array, f"{name} output {out}")


def test_only_requested_outputs_are_made(server, client):
    inputs = repository.tiny_inputs("gru_regressor")
    want = vigil_run(repository.model_file(server.repo, "gru_regressor"), inputs)
    for name in want:
        reply = client.infer("gru_regressor", inputs, outputs=[name])
        assert reply.ok, reply.error
        assert list(reply.outputs) == [name]
        assert_same(reply.outputs[name], want[name], f"gru_regressor output {name}")


def model_dims(path):
    """{name: (onnx elem type, dims with -1 for symbolic)} of inputs and outputs, read with onnx."""
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    dims = {}
    for v in list(m.graph.input) + list(m.graph.output):
        if v.name in init:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else -1 for d in v.type.tensor_type.shape.dim]
        dims[v.name] = (v.type.tensor_type.elem_type, shape)
    return dims


@pytest.mark.parametrize("name,batchable", [("mobilenet_auto", True), ("unet", False), ("gru_regressor", False)])
def test_config_filled_in_from_the_model(server, client, name, batchable):
    """config.pbtxt holds only `backend: "vigil"`: inputs, outputs and
    max_batch_size come from the model; a model whose inputs and outputs
    all have a symbolic dim 0 gets --backend-config's default-max-batch-size."""
    import onnx
    assert (server.repo / name / "config.pbtxt").read_text().splitlines()[0] == 'backend: "vigil"'
    status, config = client.get_json(f"/v2/models/{name}/config")
    assert status == 200, config
    expected_batch = DEFAULT_MAX_BATCH_SIZE if batchable else 0
    assert config["max_batch_size"] == expected_batch
    dims = model_dims(repository.model_file(server.repo, name))
    listed = {t["name"]: t for t in config["input"] + config["output"]}
    assert sorted(listed) == sorted(dims)
    for tensor, (elem_type, shape) in dims.items():
        want_type = "TYPE_" + {onnx.TensorProto.FLOAT: "FP32", onnx.TensorProto.INT64: "INT64"}[elem_type]
        assert listed[tensor]["data_type"] == want_type, tensor
        assert listed[tensor]["dims"] == (shape[1:] if batchable else shape), tensor


def test_filled_in_batch_dim_serves_batches(server, client):
    x = repository.tiny_inputs("mobilenet_v2")["input_0"]
    batch = np.concatenate([x, x[:, :, ::-1, :]]).copy()
    reply = client.infer("mobilenet_auto", {"input_0": batch})
    assert reply.ok, reply.error
    want = vigil_run(repository.model_file(server.repo, "mobilenet_auto"), {"input_0": batch})
    for out, array in want.items():
        assert_same(reply.outputs[out], array, f"mobilenet_auto output {out}")


def test_unload_and_load_again(server, client):
    """ModelFinalize and ModelInstanceFinalize, then a fresh ModelInitialize."""
    status, body = client.post_json("/v2/repository/models/unet/unload")
    assert status == 200, body
    status, error = server.load("unet")
    assert status == 200, error
    inputs = repository.tiny_inputs("unet")
    reply = client.infer("unet", inputs)
    assert reply.ok, reply.error
    assert_same(reply.outputs["115"], vigil_run(repository.model_file(server.repo, "unet"), inputs)["115"], "unet")
