"""Dynamic batching: requests joined into one run give what single runs give;
a bad request in a batch fails alone; requests that cannot be joined run
separately; the statistics count it all."""

import re

import numpy as np

import repository
from conftest import REPORT, assert_same, concurrently, diagnosis_parts, vigil_diagnosis, vigil_run

def infer_together(server, model, inputs, tag):
    """One request per input, each on its own connection and thread, sent
    together (so the dynamic batcher can join them); replies in order."""
    def send(i):
        c = server.client()
        try:
            return c.infer(model, {"input_0": inputs[i]}, request_id=f"{tag}-{i}")
        finally:
            c.close()

    return concurrently([lambda i=i: send(i) for i in range(len(inputs))])



def unet_input(seed, batch=1, width=64):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, 3, 64, width)).astype(np.float32)


def delta(before, after, *keys):
    def get(stats):
        for k in keys:
            stats = stats[k]
        return stats
    return get(after) - get(before)


def metric(text, name, model):
    """The metric summed over its lines for version 1 of the model (a GPU
    instance's lines carry a gpu_uuid label too, in any order)."""
    total, found = 0.0, False
    for labels, value in re.findall(r'^%s\{([^}]*)\} (\S+)$' % name, text, re.M):
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if pairs.get("model") == model and pairs.get("version") == "1":
            total, found = total + float(value), True
    assert found, f"{name} for {model} not in the metrics"
    return total


def batch_counts(stats):
    return {b["batch_size"]: b["compute_infer"]["count"] for b in stats.get("batch_stats", [])}


def test_concurrent_requests_are_batched_and_match_single_runs(server):
    model = "unet_batch"
    path = repository.model_file(server.repo, model)
    inputs = [unet_input(seed, batch=2 if seed % 4 == 0 else 1) for seed in range(12)]
    before = server.stats(model)

    replies = infer_together(server, model, inputs, "batch")
    for i, reply in enumerate(replies):
        assert not isinstance(reply, Exception), reply
        assert reply.ok, reply.error
        assert_same(reply.outputs["115"], vigil_run(path, {"input_0": inputs[i]})["115"], f"request {i}")

    after = server.stats(model)
    requests, items = len(inputs), sum(x.shape[0] for x in inputs)
    executions = delta(before, after, "execution_count")
    assert delta(before, after, "inference_stats", "success", "count") == requests
    assert delta(before, after, "inference_count") == items
    assert 0 < executions < requests, f"{executions} executions for {requests} requests: nothing was batched"
    # One batch statistic per execution, each counting the items it ran.
    b0, b1 = batch_counts(before), batch_counts(after)
    runs = {size: b1.get(size, 0) - b0.get(size, 0) for size in b1}
    assert sum(runs.values()) == executions
    assert sum(size * n for size, n in runs.items()) == items
    assert delta(before, after, "inference_stats", "compute_infer", "ns") > 0
    REPORT.append(f"dynamic batching ({model}): {requests} requests ({items} items) in {executions} executions, "
                  f"batch sizes {dict(sorted((k, v) for k, v in runs.items() if v))}")

    # Triton's metrics endpoint reports what the backend reported.
    text = server.metrics()
    assert metric(text, "nv_inference_exec_count", model) == after["execution_count"]
    assert metric(text, "nv_inference_request_success", model) == after["inference_stats"]["success"]["count"]
    assert metric(text, "nv_inference_count", model) == after["inference_count"]


def test_bad_request_in_a_batch_fails_alone(server):
    """unet_ragged has wildcard dims and allow_ragged_batch, so Triton puts
    requests of different shapes into one execution; the backend checks
    each with vigil and joins the good ones."""
    model = "unet_ragged"
    path = repository.model_file(server.repo, model)
    good = [unet_input(100), unet_input(101, batch=2), unet_input(102)]
    bad = unet_input(103, width=32)
    sent = good[:2] + [bad] + good[2:]
    before = server.stats(model)

    replies = infer_together(server, model, sent, "ragged")
    after = server.stats(model)
    assert delta(before, after, "execution_count") == 1, "the four requests were not in one execution"

    bad_reply = replies[2]
    assert bad_reply.status == 400 and bad_reply.error, bad_reply
    want_summary, want_fixes = diagnosis_parts(vigil_diagnosis(path, {"input_0": bad}))
    summary, fixes = diagnosis_parts(bad_reply.error)
    assert summary == want_summary
    assert fixes == want_fixes and fixes
    assert "request: 'ragged-2'" in bad_reply.error and "triton model: unet_ragged" in bad_reply.error

    for reply, x in zip(replies[:2] + replies[3:], good):
        assert reply.ok, reply.error
        assert_same(reply.outputs["115"], vigil_run(path, {"input_0": x})["115"], "a good request beside a bad one")
    assert delta(before, after, "inference_stats", "success", "count") == 3
    assert delta(before, after, "inference_stats", "fail", "count") == 1
    b0, b1 = batch_counts(before), batch_counts(after)
    assert b1.get(4, 0) - b0.get(4, 0) == 1, "the good requests (1 + 2 + 1 items) ran as one batch of 4"


def test_requests_that_cannot_be_joined_run_separately(server):
    """pair: out = a + b over float32[N,S]. Requests with different S reach
    one execution (allow_ragged_batch) but cannot be joined along dim 0."""
    model = "pair"
    path = repository.model_file(server.repo, model)
    rng = np.random.default_rng(5)
    shapes = [(1, 4), (2, 4), (1, 6)]
    good = [{"a": rng.standard_normal(s).astype(np.float32), "b": rng.standard_normal(s).astype(np.float32)}
            for s in shapes]
    bad = {"a": np.ones((1, 4), np.float32), "b": np.ones((1, 5), np.float32)}
    sent = good + [bad]
    before = server.stats(model)

    def send(i):
        c = server.client()
        try:
            return c.infer(model, sent[i], request_id=f"pair-{i}")
        finally:
            c.close()

    replies = concurrently([lambda i=i: send(i) for i in range(len(sent))])
    after = server.stats(model)
    assert delta(before, after, "execution_count") == 1, "the requests were not in one execution"
    for reply, inputs in zip(replies, good):
        assert reply.ok, reply.error
        assert_same(reply.outputs["out"], vigil_run(path, inputs)["out"], "pair")
        assert np.array_equal(reply.outputs["out"], inputs["a"] + inputs["b"])
    assert replies[3].status == 400
    want_summary, want_fixes = diagnosis_parts(vigil_diagnosis(path, bad))
    summary, fixes = diagnosis_parts(replies[3].error)
    assert summary == want_summary and fixes == want_fixes
    # One execution: the two S=4 requests joined (3 items), the S=6 one alone.
    assert delta(before, after, "inference_stats", "success", "count") == 3
    b0, b1 = batch_counts(before), batch_counts(after)
    assert b1.get(4, 0) - b0.get(4, 0) == 1, "one batch statistic for the execution: 2 + 1 + 1 items ran"
