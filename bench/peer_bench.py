#!/usr/bin/env python3
"""Peer benchmark: vigil (--backend cuda) against PyTorch eager,
torch.compile(mode="reduce-overhead") and, with --ort, ONNX Runtime's CUDA
execution provider (bench/ort_peer.py), on the same GPU in the same call.

    python3 bench/peer_bench.py VIGIL_BINARY OUT_DIR [--models resnet50,mobilenet_v2,vit_b_16,bert_base,unet]
        [--batches 1,64] [--dtypes fp16,fp32] [--tf32] [--ort] [--iters 50] [--no-compile]
        [--markdown FILE] [--json FILE] [--no-mha-fastpath]

For each model (torchvision architecture; bert_base: transformers'
BertModel with BERT-base's configuration, sequence length 128; unet: the
real-model checks' UNet of tools/models/export_models.py on 224x224 images;
random weights, seed 0) and dtype it exports one ONNX file with a dynamic batch dim
(BERT's float16 model is its float32 export converted, to_fp16: the
exporter's own float16 export mixes float16 and float32 in LayerNorm, which
ORT refuses), then for each batch:
- PyTorch eager and compiled: inputs already on the GPU, channels_last for
  CNNs, warm-up, then the median of --iters CUDA-event timings of one
  forward pass; nn.MultiheadAttention (ViT) with its fused fast path, as
  PyTorch runs it by default (--no-mha-fastpath turns it off);
- vigil: `vigil bench --backend cuda --dim N=<batch> --inputs-on-device
  --outputs-on-device --json`, the median wall-clock time of Session::Run
  with the input already on the GPU and the outputs left there (as the peers
  have them: PyTorch's outputs stay on the GPU, ORT's are bound there), up
  to the synchronisation; before 2026-11-27 every run also copied the
  outputs to the host (BERT-base at batch 64: 12.6 MB, about 0.3 ms on an
  H200). "end to end" is without both flags (every run also copies the
  input from the host, from the page-locked buffers vigil bench allocates
  through Session::AllocateHostBuffer, and the outputs back; before
  2026-11-22 the input came from pageable memory).
vigil records each run as a CUDA graph after its first run and replays it
(`vigil bench --cuda-graphs on`, the default), as torch.compile's
reduce-overhead mode does. fp32 runs with TF32 off on every side (PyTorch's
cuDNN and ORT allow TF32 by default: it is switched off here); --tf32 turns
it on everywhere (vigil --tf32, PyTorch's two allow_tf32 flags, ORT's
use_tf32), as an fp32 model runs by default in ORT.
- ORT (--ort): the fastest of four provider configurations, inputs and
  outputs bound on the GPU (bench/ort_peer.py).
The table gives milliseconds per batch, items per second, and the speed-up
of vigil over each peer and over the fastest (> 1: vigil is faster). Needs
torch and torchvision (and transformers for bert_base).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def calibrated(model):
    """Sets BatchNorm's running statistics from a few random batches, so that
    activations stay in range through the network: with the default
    statistics a random-weight MobileNetV2 saturates every ReLU6 and its
    output is the same for every input, which makes accuracy checks vacuous."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(16, 3, 224, 224))
    return model.eval()


BERT_SEQ = 128


def build(name):
    """(model, kind): kind "cnn" (channels_last in PyTorch), "vit" or "bert"."""
    torch.manual_seed(0)
    if name == "bert_base":
        from transformers import BertConfig, BertModel
        class Bert(torch.nn.Module):
            """BERT-base (12 layers, hidden 768, 12 heads) called with keywords; returns
            (last_hidden_state, pooler_output), a plain tuple for the exporter."""
            def __init__(self):
                super().__init__()
                self.bert = BertModel(BertConfig())

            def forward(self, input_ids, attention_mask):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
                return out.last_hidden_state, out.pooler_output

        return Bert().eval(), "bert"
    import torchvision.models as tvm
    if name == "resnet50":
        return calibrated(tvm.resnet50()), "cnn"
    if name == "mobilenet_v2":
        return calibrated(tvm.mobilenet_v2()), "cnn"
    if name == "vit_b_16":
        m = tvm.vit_b_16()
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        return m, "vit"
    if name == "unet":
        # The real-model checks' UNet (stride-1 3x3 convolutions at full
        # resolution, 32 to 128 channels), fed the same 224x224 images.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "models"))
        from export_models import UNet
        return calibrated(UNet(base=32)), "cnn"
    raise SystemExit(f"unknown model {name}")


def example_inputs(kind, batch, dtype, seed=0):
    """The model's inputs as numpy arrays, by ONNX input name: an image batch, or BERT's token ids and mask."""
    rng = np.random.default_rng(seed)
    if kind == "bert":
        return {"input_ids": rng.integers(0, 30522, (batch, BERT_SEQ), dtype=np.int64),
                "attention_mask": np.ones((batch, BERT_SEQ), dtype=np.int64)}
    np_dtype = {"fp32": np.float32, "fp16": np.float16}.get(dtype, np.float32)
    return {"input_0": rng.standard_normal((batch, 3, 224, 224)).astype(np_dtype)}


def torch_inputs(kind, feeds, dtype, cnn_layout):
    out = {}
    for k, v in feeds.items():
        t = torch.from_numpy(v).to("cuda")
        if t.is_floating_point():
            t = t.to(DTYPES[dtype])
            if cnn_layout:
                t = t.contiguous(memory_format=torch.channels_last)
        out[k] = t
    return out


def cuda_ms(fn, x, warmup, iters):
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def to_fp16(src, dst):
    """Writes the float32 ONNX model `src` as float16 to `dst`: every float32 initializer, constant, Cast target
    and declared type becomes float16, values clamped to float16's range (an attention mask's float32 minimum
    would become -inf, and 0 * -inf is NaN)."""
    import onnx
    from onnx import TensorProto, numpy_helper

    def half(t):
        a = np.clip(numpy_helper.to_array(t), -65504.0, 65504.0).astype(np.float16)
        t.CopyFrom(numpy_helper.from_array(a, t.name))

    m = onnx.load(src)
    g = m.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            half(t)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                half(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def export(model, name, dtype, out_dir):
    path = os.path.join(out_dir, f"{name}_{dtype}.onnx")
    if os.path.exists(path):
        return path
    if name == "bert_base":
        # float32 from the CPU; float16 converted from it (see the docstring).
        if dtype == "fp16":
            to_fp16(export(model, name, "fp32", out_dir), path)
            return path
        m = model.to("cpu", torch.float32).eval()
        feeds = {k: torch.from_numpy(v) for k, v in example_inputs("bert", 1, dtype).items()}
        with torch.no_grad():
            torch.onnx.export(m, (feeds["input_ids"], feeds["attention_mask"]), path, opset_version=17,
                              input_names=list(feeds), output_names=["last_hidden_state", "pooler_output"],
                              dynamo=False, dynamic_axes={k: {0: "N"} for k in feeds}, do_constant_folding=True)
        return path
    # The exporter traces nn.MultiheadAttention's Python path, not its fused
    # fast path. The switch is global: it is restored after the export, so
    # that PyTorch eager is timed as users run it, fast path included (until
    # 2026-11-22 it stayed off, and ViT's eager times were the slow path's).
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        m = model.to("cpu", DTYPES[dtype]).eval()
        x = torch.randn(1, 3, 224, 224, dtype=DTYPES[dtype])
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, opset_version=17, input_names=["input_0"], dynamo=False,
                              dynamic_axes={"input_0": {0: "N"}}, do_constant_folding=True)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return path


def vigil_ms(vigil, path, batch, warmup, iters, on_device, input_files=None, tf32=False):
    """input_files: name -> .npy path (BERT's token ids must be in range); else random inputs of batch `batch`."""
    inputs = [a for k, f in (input_files or {}).items() for a in ("-i", f"{k}={f}")]
    cmd = [vigil, "bench", path, "--backend", "cuda", "--no-fallback", "--dim", f"N={batch}", "--warmup",
           str(warmup), "--iters", str(iters), "--json"] + inputs + (
               ["--inputs-on-device", "--outputs-on-device"] if on_device else [])
    if tf32:
        cmd.append("--tf32")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stdout + r.stderr).strip().splitlines()[:2]
    return json.loads(r.stdout)["p50_ms"], None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("vigil")
    p.add_argument("out")
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16")
    p.add_argument("--batches", default="1,64")
    p.add_argument("--dtypes", default="fp16")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--ort", action="store_true", help="also time ONNX Runtime's CUDA provider (bench/ort_peer.py)")
    p.add_argument("--tf32", action="store_true", help="fp32 with TF32 allowed on every side (default: off)")
    p.add_argument("--markdown", default="")
    p.add_argument("--json", default="", help="also write every row to this file")
    p.add_argument("--no-mha-fastpath", action="store_true",
                   help="time PyTorch with nn.MultiheadAttention's fused fast path off (as every run before "
                        "2026-11-22 did by mistake), to compare with older tables")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    gpu = torch.cuda.get_device_name()
    header = f"GPU {gpu}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, TF32 {'on' if a.tf32 else 'off'}"
    if a.ort:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import ort_peer
        header += f", onnxruntime {ort_peer.version()}"
    print(header, flush=True)
    if a.no_mha_fastpath:
        torch.backends.mha.set_fastpath_enabled(False)
    rows = []
    for name in a.models.split(","):
        for dt in a.dtypes.split(","):
            model, kind = build(name)
            path = export(model, name, dt, a.out)
            m = model.to("cuda", DTYPES[dt]).eval()
            if kind == "cnn":
                m = m.to(memory_format=torch.channels_last)
            compiled = None if a.no_compile else torch.compile(m, mode="reduce-overhead")
            for batch in [int(b) for b in a.batches.split(",")]:
                feeds = example_inputs(kind, batch, dt)
                files = {}
                for k, v in feeds.items():
                    files[k] = os.path.join(a.out, f"{name}_{dt}_b{batch}_{k}.npy")
                    np.save(files[k], v)
                x = torch_inputs(kind, feeds, dt, kind == "cnn")
                run = (lambda mod: (lambda t: mod(**t))) if kind == "bert" else (lambda mod: (lambda t: mod(t["input_0"])))
                row = {"model": name, "dtype": dt, "batch": batch, "tf32": a.tf32 and dt == "fp32",
                       "mha_fastpath": torch.backends.mha.get_fastpath_enabled()}
                row["eager_ms"] = cuda_ms(run(m), x, a.warmup, a.iters)
                if compiled is not None:
                    row["compiled_ms"] = cuda_ms(run(compiled), x, a.warmup, a.iters)
                row["vigil_ms"], err = vigil_ms(a.vigil, path, batch, a.warmup, a.iters, True, files, a.tf32)
                if err:
                    row["vigil_error"] = err
                row["vigil_e2e_ms"], _ = vigil_ms(a.vigil, path, batch, a.warmup, a.iters, False, files, a.tf32)
                if a.ort:
                    row["ort"] = ort_peer.time_model(path, feeds, a.iters, a.warmup, tf32=a.tf32 if dt == "fp32" else None)
                    row["ort_config"], row["ort_ms"] = ort_peer.best(row["ort"])
                rows.append(row)
                print(json.dumps(row), flush=True)
            del m, compiled
            torch.cuda.empty_cache()
    lines = [header + "; ms per batch, median", "",
             "| model | dtype | batch | PyTorch eager | torch.compile | ORT CUDA (config) | vigil | vigil items/s "
             "| vs eager | vs compiled | vs ORT | vs fastest peer | vigil end to end |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r.get("vigil_ms")
        ms = lambda t: f"{t:.3f}" if t else "-"
        ratio = lambda t: f"{t / v:.2f}x" if t and v else "-"
        peers = [t for t in (r["eager_ms"], r.get("compiled_ms"), r.get("ort_ms")) if t]
        ort_cell = f"{ms(r.get('ort_ms'))} ({r.get('ort_config')})" if r.get("ort_ms") else "-"
        vigil = f"{v:.3f} | {r['batch'] / v * 1e3:.0f}" if v else "error: " + " ".join(r.get("vigil_error", []))[:80] + " | -"
        lines.append(f"| {r['model']} | {r['dtype']}{' TF32' if r['tf32'] else ''} | {r['batch']} | {ms(r['eager_ms'])} "
                     f"| {ms(r.get('compiled_ms'))} | {ort_cell} | {vigil} | {ratio(r['eager_ms'])} "
                     f"| {ratio(r.get('compiled_ms'))} | {ratio(r.get('ort_ms'))} | {ratio(min(peers))} "
                     f"| {ms(r.get('vigil_e2e_ms'))} |")
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
